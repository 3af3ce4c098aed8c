"""A scripted model API on 127.0.0.1 for the real clients: Anthropic's Messages API (Claude
Code, through ANTHROPIC_BASE_URL) and OpenAI's Responses API (Codex, through a model
provider's base_url), both streamed as server-sent events.

The script is a list of shell commands the model runs one after the other; the step a
request is at is the number of tool results its conversation already holds, so a client's
side requests (a title, a quota probe) and retries get the same answer. After the last
command the model says it is done. Every request body is kept for the test to read.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeModelAPI:
    def __init__(self, commands: list[str]):
        self.commands = commands
        self.requests: list[dict] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeModelAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def texts(self) -> list[str]:
        """Every request's body as text: what the model was shown."""
        return [json.dumps(r, ensure_ascii=False) for r in self.requests]

    def command_at(self, done: int) -> str | None:
        return self.commands[done] if done < len(self.commands) else None


def _handler(api: FakeModelAPI):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            self._send_json({"data": [], "models": []})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0))
                              or b"{}")
            api.requests.append(body)
            if self.path.rstrip("/").endswith("/responses"):
                events = _responses_events(api, body)
            elif self.path.split("?")[0].rstrip("/").endswith("/messages"):
                if self.path.split("?")[0].endswith("count_tokens"):
                    return self._send_json({"input_tokens": 10})
                events = _messages_events(api, body)
            else:
                return self._send_json({})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for name, data in events:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

        def _send_json(self, data: dict) -> None:
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler


def _messages_events(api: FakeModelAPI, body: dict) -> list[tuple[str, dict]]:
    """Claude Code: a Bash tool_use for the next command, else a closing text."""
    done = sum(1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
               for block in m["content"] if block.get("type") == "tool_result")
    command = api.command_at(done) if body.get("tools") else None
    usage = {"input_tokens": 10, "output_tokens": 5}
    events = [("message_start", {"type": "message_start", "message": {
        "id": f"msg_{len(api.requests)}", "type": "message", "role": "assistant",
        "model": body.get("model", "claude"), "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": usage}})]
    if command is None:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": "Done."}
        stop = "end_turn"
    else:
        block = {"type": "tool_use", "id": f"toolu_{done:02d}", "name": "Bash", "input": {}}
        delta = {"type": "input_json_delta",
                 "partial_json": json.dumps({"command": command, "description": "run"})}
        stop = "tool_use"
    events += [
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 5},
                           "delta": {"stop_reason": stop, "stop_sequence": None}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def _responses_events(api: FakeModelAPI, body: dict) -> list[tuple[str, dict]]:
    """Codex: an exec_command function call for the next command, else a closing message."""
    done = sum(1 for item in body.get("input", []) if isinstance(item, dict)
               and item.get("type") in ("function_call_output", "custom_tool_call_output"))
    command = api.command_at(done)
    rid = f"resp_{len(api.requests)}"
    if command is None:
        item = {"type": "message", "role": "assistant", "id": f"msg_{rid}",
                "content": [{"type": "output_text", "text": "Done."}]}
    else:
        item = {"type": "function_call", "id": f"fc_{rid}", "call_id": f"call_{done:02d}",
                "name": "exec_command", "arguments": json.dumps({"cmd": command})}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 15}
    return [
        ("response.created", {"type": "response.created", "response": {"id": rid}}),
        ("response.output_item.done", {"type": "response.output_item.done", "item": item}),
        ("response.completed", {"type": "response.completed",
                                "response": {"id": rid, "usage": usage}}),
    ]
