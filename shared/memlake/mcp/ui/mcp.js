// tools/call over the Streamable HTTP transport (stateless JSON: one POST, one answer), with
// the tab's bearer token when the server has API keys.

export const TOKEN_KEY = "memlake-token";
let nextId = 0;

export class ToolError extends Error {
  constructor(error) {
    super(error.message || "the tool failed");
    this.code = error.code;
    this.hint = error.hint;
  }
}

export class NeedToken extends Error {}

export async function tool(name, args = {}) {
  const headers = { "content-type": "application/json", accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.authorization = "Bearer " + token;
  const body = { jsonrpc: "2.0", id: ++nextId, method: "tools/call",
    params: { name, arguments: args } };
  const res = await fetch("/mcp", { method: "POST", headers, body: JSON.stringify(body) });
  if (res.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    throw new NeedToken(token ? "that token was not accepted" : "this server needs a token");
  }
  const answer = await res.json();
  if (answer.error) throw new ToolError(answer.error);
  const result = answer.result;
  if (result.isError) throw new ToolError(JSON.parse(result.content[0].text).error);
  return result.structuredContent;
}

