// A real MCP client for tests/gateway.rs: the TypeScript SDK (@modelcontextprotocol/sdk 1.32, from
// npm; `.ci/run` installs it globally and the test sets NODE_PATH to npm's global root).
//
// usage: node mcp_client_ts.cjs TOOL ARGUMENTS_JSON -- COMMAND [ARG...]
//        node mcp_client_ts.cjs TOOL ARGUMENTS_JSON -- URL    (Streamable HTTP; a bearer token
//                                                              from MCP_TEST_BEARER when set)
//
// Starts COMMAND as an MCP server over stdio, lists its tools as a client does (the SDK keeps
// each tool's outputSchema and validates structured results against it), calls TOOL once and
// prints one JSON line: {"result": …} as the SDK returned it, or {"error": {"message", "code"}}
// when the SDK threw instead.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

async function main() {
  const argv = process.argv.slice(2);
  const sep = argv.indexOf("--");
  if (sep !== 2 || argv.length < 4) {
    throw new Error("usage: mcp_client_ts.cjs TOOL ARGUMENTS_JSON -- COMMAND [ARG...]");
  }
  const [tool, args] = argv;
  const [command, ...rest] = argv.slice(3);
  const token = process.env.MCP_TEST_BEARER;
  const transport =
    rest.length === 0 && /^https?:/.test(command)
      ? new StreamableHTTPClientTransport(new URL(command), {
          requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : {},
        })
      : new StdioClientTransport({ command, args: rest, env: process.env, stderr: "inherit" });
  const client = new Client({ name: "warrant-test-ts", version: "1.0.0" });
  await client.connect(transport);
  try {
    await client.listTools();
    const result = await client.callTool({ name: tool, arguments: JSON.parse(args) }, undefined, {
      timeout: 120000,
      resetTimeoutOnProgress: true,
    });
    console.log(JSON.stringify({ result }));
  } catch (e) {
    console.log(JSON.stringify({ error: { message: String(e && e.message), code: e && e.code } }));
  }
  await client.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
