"""The suite's py4j lookups made once per name (`remember_lookups`, which tests/conftest.py calls
before it starts the suite's SparkSession).

PySpark resolves a JVM class at every use: `sc._jvm.PythonUtils.toSeq(...)` is a round trip for
the class, another for the method, then the call; and the JVM resolves a short name such as
`PythonUtils` or `functions` by trying it bare and under each package PySpark imported, every
try that misses a scan of the 280 jars on Spark's class path. The suite makes thousands of these
(tests/capture/test_capture_auto.py alone: 1,500 `PythonUtils`, 365 `functions`, 1,300
`org.apache.spark.sql.functions`). Here a `JVMView` keeps each class it found, and a class each
method or nested class it found, on the instance, where Python's attribute lookup finds them
before `__getattr__` asks the JVM again: ~6% less CPU over the capture tests. A class, method or
nested class cannot change in a running JVM; static fields (values, which can) and misses are
asked every time, as before. What a call computes is unchanged; only the Python-side lookups are
remembered. Only the suite's own process does this: `strata` and the jobs it starts in child
processes run PySpark as users do.
"""

from __future__ import annotations


def remember_lookups() -> None:
    from py4j import java_gateway as g

    view_lookup, class_lookup = g.JVMView.__getattr__, g.JavaClass.__getattr__
    if getattr(view_lookup, "remembers", False):
        return

    def view_getattr(self, name):
        found = view_lookup(self, name)
        if type(found) is g.JavaClass:
            self.__dict__[name] = found
        return found

    def class_getattr(self, name):
        found = class_lookup(self, name)
        if type(found) in (g.JavaMember, g.JavaClass):
            self.__dict__[name] = found
        return found

    view_getattr.remembers = True
    g.JVMView.__getattr__, g.JavaClass.__getattr__ = view_getattr, class_getattr
