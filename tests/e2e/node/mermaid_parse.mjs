// Parse Mermaid diagrams with Mermaid's own parser (no rendering).
//
// stdin:  a JSON array of diagram sources.
// stdout: a JSON array, one entry per diagram, in order:
//   {"ok": true, "type": "flowchart-v2", "vertices": [{"id", "text"}], "edges": [{"start", "end", "text"}]}
//   {"ok": false, "error": "..."}
// Texts are Mermaid's stored label strings: entity codes are still in placeholder form
// ("\uFB02\u00B0\u00B035\u00B6\u00DF" for #35;) and <br/> is normalized to <br>.
// Mermaid's sanitizer (DOMPurify) needs a DOM, so jsdom provides window/document first.
import { JSDOM } from 'jsdom';

const { window } = new JSDOM('<!DOCTYPE html><html><body></body></html>');
globalThis.window = window;
globalThis.document = window.document;
const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const diagrams = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const results = [];
for (const text of diagrams) {
  try {
    const parsed = await mermaid.parse(text);
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    const db = diagram.db;
    const vertices = db.getVertices
      ? [...db.getVertices().values()].map((v) => ({ id: v.id, text: v.text }))
      : [];
    const edges = db.getEdges ? db.getEdges().map((e) => ({ start: e.start, end: e.end, text: e.text })) : [];
    results.push({ ok: true, type: parsed.diagramType, vertices, edges });
  } catch (error) {
    results.push({ ok: false, error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
