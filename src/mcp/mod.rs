//! `cuekit mcp`: a Model Context Protocol server on stdio, so AI parents can delegate through
//! cuekit as a tool. The tools ([`tools`]) call the same [`crate::ops`] as the command line;
//! nothing here decides anything about a task. stdout is the protocol: logs go to stderr.

mod brief;
mod changes;
mod schema;
mod tools;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool_handler};

use crate::domain::parent::unexpanded;

/// What the server tells a client about itself at `initialize`.
const INSTRUCTIONS: &str = "cuekit runs child coding agents (Gemini CLI first) in tmux and \
follows each to its end. Typical flow: submit_task → wait (call again while it reports \
`timed_out`) → get_task_result. For an interactive task: wait with until=input_required, \
read get_task_snapshot, steer_task with the next message, and cancel_tasks when done. \
For parallel children in one repository, submit_task with worktree=true gives each its own \
git worktree and branch: review with get_task_diff, see whose work would clash with get_conflicts, take the work with \
merge_task, clean up with remove_tasks. \
Errors carry stable codes (task_not_found, invalid_input, invalid_state, \
steering_unsupported, merge_conflict, …) in structuredContent.error.code.";

/// The MCP server: the working directory it was started in (the default `cwd` of submitted
/// tasks and the project `list` shows) and its tools.
#[derive(Clone)]
pub struct CuekitServer {
    cwd: PathBuf,
    tool_router: ToolRouter<CuekitServer>,
}

impl CuekitServer {
    pub fn new(cwd: &Path) -> CuekitServer {
        let mut tool_router = CuekitServer::tool_router() + CuekitServer::worktree_router();
        for route in tool_router.map.values_mut() {
            let tool = &mut route.attr;
            tool.input_schema = Arc::new(schema::standard_formats(&tool.input_schema));
            if let Some(output) = &tool.output_schema {
                tool.output_schema = Some(Arc::new(schema::standard_formats(output)));
            }
        }
        CuekitServer {
            cwd: cwd.to_path_buf(),
            tool_router,
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CuekitServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("cuekit", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = ToolCallContext::new(self, request, context);
        Ok(match self.tool_router.call(call).await? {
            CallToolResponse::Complete(result) => tools::with_error_code(result).into(),
            other => other,
        })
    }
}

/// Removes the agents' credential variables that the client handed over as a reference it did
/// not expand (`$GEMINI_API_KEY` as text) or empty: children submitted from here inherit this
/// environment, and one of them must fail cleanly (`auth_missing`), never with a bogus key.
fn drop_unexpanded_keys() {
    for name in crate::domain::adapter::ADAPTERS
        .iter()
        .flat_map(|adapter| adapter.auth_env)
    {
        if std::env::var(name).is_ok_and(|value| unexpanded(&value)) {
            // SAFETY: called first thing in `serve`, before the runtime or any other thread.
            unsafe { std::env::remove_var(name) };
        }
    }
}

/// Serves MCP on stdin/stdout until the client closes the connection.
///
/// The operations are blocking (short sleeps and `stat`s, tmux calls), so each tool call runs
/// on tokio's blocking pool and a long `wait` never holds up another call.
pub fn serve(cwd: &Path) -> anyhow::Result<()> {
    drop_unexpanded_keys();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let server = CuekitServer::new(cwd);
    let result = runtime.block_on(async move {
        eprintln!(
            "cuekit mcp {}: serving on stdio (cwd {})",
            env!("CARGO_PKG_VERSION"),
            cwd.display()
        );
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|err| anyhow::anyhow!("MCP initialization failed: {err}"))?;
        let reason = running.waiting().await?;
        eprintln!("cuekit mcp: stopped ({reason:?})");
        anyhow::Ok(())
    });
    // A tool call may still be sleeping in `wait` on the blocking pool: do not hang on it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_schema_keeps_to_json_schema_s_own_formats() {
        // What schemars makes of the tools' arguments (`timeout`'s seconds are a u64).
        let raw = CuekitServer::tool_router() + CuekitServer::worktree_router();
        let raw_formats: Vec<String> = raw
            .list_all()
            .iter()
            .flat_map(|tool| {
                schema::formats(&serde_json::Value::Object((*tool.input_schema).clone()))
            })
            .collect();
        assert!(raw_formats.iter().any(|f| f == "uint64"), "{raw_formats:?}");
        let server = CuekitServer::new(Path::new("/"));
        let tools = server.tool_router.list_all();
        assert!(tools.len() > 5);
        for tool in tools {
            let schemas = std::iter::once(&tool.input_schema).chain(tool.output_schema.as_ref());
            for schema in schemas {
                let found = schema::formats(&serde_json::Value::Object((**schema).clone()));
                assert!(
                    found.iter().all(|f| f == "date-time" || f == "uri"),
                    "{}: {found:?}",
                    tool.name
                );
            }
        }
    }
}
