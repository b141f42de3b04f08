//! An interactive Qwen Code child's own chat record (`~/.qwen/projects/<the folder's path,
//! each character not a letter or digit made '-'>/chats/<session id>.jsonl`, 0.15.10: no
//! longer the Gemini CLI's layout it forked from). Pure: lines in, the child's answer, tool
//! calls and tokens out. The file is the child's to write, so every line is data: a line that
//! is not a record is counted and skipped, text is cut to a bound.
//!
//! The format, as the real CLI writes it (tests/fixtures/qwen/chat-tool-call.jsonl): one
//! record a line `{"uuid", "parentUuid", "sessionId", "type", …}`, appended, never rewritten:
//! `user` (`message.parts[].text`: what was typed), `assistant` (`message.parts`: `text`
//! parts — `thought: true` ones are its thinking —, `functionCall` {id, name, args};
//! `usageMetadata`, `model`), `tool_result` (`message.parts[].functionResponse` {id,
//! response {output | error}}, `toolCallResult.status`) and `system` lines (telemetry).

use serde_json::Value;

use super::chat::{ChatDigest, Folded, cut};

/// A Qwen Code chat record folded line by line (streamed: the file may be long).
#[derive(Debug, Default)]
pub struct QwenChat {
    fold: Folded,
}

impl QwenChat {
    pub fn push_line(&mut self, line: &[u8]) {
        let Some(record) = self.fold.object(line) else {
            return;
        };
        if self.fold.session_id.is_none()
            && let Some(id) = record["sessionId"].as_str()
        {
            self.fold.session_id = Some(cut(id, 200));
        }
        let parts = record["message"]["parts"].as_array();
        match record["type"].as_str() {
            Some("user") => {
                if parts
                    .into_iter()
                    .flatten()
                    .any(|part| part["text"].is_string())
                {
                    self.fold.messages += 1;
                    self.fold.answer.prompt();
                }
            }
            Some("assistant") => {
                self.fold.messages += 1;
                self.assistant(&record);
            }
            Some("tool_result") => {
                for response in parts.into_iter().flatten() {
                    let response = &response["functionResponse"];
                    let error = response["response"]["error"].as_str();
                    let failed = error.is_some() || record["toolCallResult"]["status"] == "error";
                    let output = error
                        .or_else(|| response["response"]["output"].as_str())
                        .unwrap_or_default();
                    self.fold.calls.result(
                        response["id"].as_str().unwrap_or_default(),
                        failed,
                        output,
                    );
                }
            }
            Some(_) => {}
            None => self.fold.unreadable += 1,
        }
    }

    fn assistant(&mut self, record: &Value) {
        if let Some(model) = record["model"].as_str() {
            self.fold.model = Some(cut(model, 200));
        }
        let usage = &record["usageMetadata"];
        let n = |key: &str| usage[key].as_u64().unwrap_or(0);
        let sum = &mut self.fold.tokens;
        sum.input = sum.input.saturating_add(n("promptTokenCount"));
        sum.output = sum.output.saturating_add(n("candidatesTokenCount"));
        sum.cached = sum.cached.saturating_add(n("cachedContentTokenCount"));
        sum.thoughts = sum.thoughts.saturating_add(n("thoughtsTokenCount"));
        sum.tool = sum.tool.saturating_add(n("toolUsePromptTokenCount"));
        sum.total = sum.total.saturating_add(n("totalTokenCount"));
        for part in record["message"]["parts"].as_array().into_iter().flatten() {
            if let Some(text) = part["text"].as_str()
                && part["thought"] != true
            {
                self.fold.answer.say(text);
            }
            let call = &part["functionCall"];
            if call.is_object() {
                self.fold.calls.call(
                    call["id"].as_str().unwrap_or_default(),
                    call["name"].as_str().unwrap_or_default(),
                    call.get("args").cloned().unwrap_or(Value::Null),
                );
            }
        }
    }

    pub fn finish(self) -> ChatDigest {
        self.fold.digest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::chat::ChatTokens;

    /// Captured from the real Qwen Code 0.15.10 (interactive in tmux, `--session-id`, `-y`,
    /// offline against a stand-in of the OpenAI chat-completions API that answered a shell
    /// call, then a text).
    const CAPTURED: &str = include_str!("../../tests/fixtures/qwen/chat-tool-call.jsonl");

    fn fold(text: &str) -> ChatDigest {
        let mut chat = QwenChat::default();
        for line in text.lines() {
            chat.push_line(line.as_bytes());
        }
        chat.finish()
    }

    #[test]
    fn the_captured_chat_gives_the_answer_the_tool_call_and_the_tokens() {
        let digest = fold(CAPTURED);
        assert_eq!(
            digest.session_id.as_deref(),
            Some("5d41c0de-49c0-4d49-8a49-0123456789ab")
        );
        assert_eq!(
            digest.final_text,
            "I will write the file.\n\nDone: wrote f.txt."
        );
        assert_eq!(digest.model.as_deref(), Some("mock-model"));
        assert_eq!(digest.tool_calls.len(), 1);
        let call = &digest.tool_calls[0];
        assert_eq!(
            (call.tool_id.as_str(), call.name.as_str()),
            ("call_1", "run_shell_command")
        );
        assert_eq!(call.parameters["command"], "echo hi > f.txt");
        assert_eq!(call.status, "success");
        assert!(
            call.output_excerpt
                .as_deref()
                .unwrap()
                .contains("Output: (empty)")
        );
        assert_eq!(
            digest.tokens,
            ChatTokens {
                input: 24,
                output: 14,
                total: 38,
                ..ChatTokens::default()
            }
        );
        assert_eq!(digest.messages, 3, "the prompt and two model messages");
        assert_eq!(digest.unreadable_lines, 0);
    }

    #[test]
    fn the_answer_is_the_last_prompts_without_its_thoughts() {
        let text = [
            r#"{"type":"user","sessionId":"s1","message":{"role":"user","parts":[{"text":"first"}]}}"#,
            r#"{"type":"assistant","message":{"role":"model","parts":[{"text":"old"}]}}"#,
            r#"{"type":"user","message":{"role":"user","parts":[{"text":"second"}]}}"#,
            r#"{"type":"assistant","message":{"role":"model","parts":[{"text":"hmm","thought":true},{"functionCall":{"id":"c1","name":"read_file","args":{}}}]}}"#,
            r#"{"type":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"read_file","response":{"error":"no such file"}}}]},"toolCallResult":{"status":"error"}}"#,
            r#"{"type":"assistant","message":{"role":"model","parts":[{"text":"new"}]}}"#,
            "[1]",
        ]
        .join("\n");
        let digest = fold(&text);
        assert_eq!(digest.final_text, "new");
        assert_eq!(digest.tool_calls[0].status, "error");
        assert_eq!(digest.unreadable_lines, 1);
    }
}
