// Lint Cypher with Neo4j's own language support library (@neo4j-cypher/language-support).
//
// stdin:  {"items": [{"text": "...", "parameters": ["rows"]}, ...]}
//   `text` may be one statement or a whole script with `;`-separated statements and
//   `:param name => value` commands (Neo4j Browser / cypher-shell). A parameter counts as
//   declared when it is listed in `parameters` or set by a `:param` command earlier in `text`.
// stdout: {"results": [{"diagnostics": [{"severity", "message", "start", "end"}],
//                       "strings": ["<raw string-literal token text>", ...]}, ...]}
import { readFileSync } from 'node:fs';
import {
  lintCypherQuery,
  parseStatementsStrs,
  highlightSyntax,
} from '@neo4j-cypher/language-support';

const PARAM = /^\s*:param\s+([A-Za-z_][A-Za-z0-9_]*)\s*=>/;

function lintOne({ text, parameters = [] }) {
  const declared = Object.fromEntries(parameters.map((p) => [p, null]));
  const diagnostics = [];
  let offset = 0;
  for (const stmt of parseStatementsStrs(text)) {
    const at = text.indexOf(stmt, offset);
    const base = at >= 0 ? at : offset;
    offset = base + stmt.length;
    const { diagnostics: found } = lintCypherQuery(
      stmt,
      { parameters: { ...declared } },
      { consoleCommandsEnabled: true },
    );
    for (const d of found) {
      diagnostics.push({
        severity: d.severity,
        message: d.message,
        start: base + d.offsets.start,
        end: base + d.offsets.end,
      });
    }
    const m = PARAM.exec(stmt);
    if (m) declared[m[1]] = null;
  }
  const strings = highlightSyntax(text, { consoleCommandsEnabled: true })
    .filter((t) => t.tokenType === 'stringLiteral')
    .map((t) => t.token);
  return { diagnostics, strings };
}

const input = JSON.parse(readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify({ results: input.items.map(lintOne) }));
