"""The one way IQL walks a tree: `visit_<NodeClass>` methods, dispatched by class name.

    class Printer(Visitor):
        name = "printer"

        def visit_Literal(self, node):
            ...

    Printer().visit(node)          # -> Printer.visit_Literal(node)

`visit(node, *args)` calls `visit_<type(node).__name__>(node, *args)`; a node without such a
method reaches `generic_visit`, which raises `UnhandledNode` naming the visitor and the node
(a new node class must be handled on purpose, not skipped by accident). Extra arguments (a
binder's scope, an executor's domains) pass through unchanged. A visitor that descends calls
`visit` on the children it wants; `Node.children()` (iql/ast.py) lists them all.

The binder, the planner, EXPLAIN, the expression compiler and both executors
(iql/duckdb/executor.py, iql/spark/executor.py) are visitors. capture/auto/plan.py walks
Spark's plans with the same idiom (its dispatch key is the JVM node's simple class name); it
cannot import iql (capture sits below it), so it spells the three lines out itself.
"""

from __future__ import annotations

from typing import Any


class UnhandledNode(TypeError):
    """A visitor met a node it has no `visit_<NodeClass>` method for (a bug in Strata)."""


class Visitor:
    """Dispatch on the node's class name; unhandled nodes raise `UnhandledNode`."""

    name = "visitor"  # who is visiting, for the error message

    def visit(self, node: Any, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self, "visit_" + type(node).__name__, self.generic_visit)
        return method(node, *args, **kwargs)

    def generic_visit(self, node: Any, *args: Any, **kwargs: Any) -> Any:
        raise UnhandledNode(f"{self.name}: unhandled node {type(node).__name__}")
