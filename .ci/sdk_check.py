"""Real clients against rag.py's servers: the official MCP Python SDK (`mcp`)
over stdio against `rag.py mcp`, and the official `openai` SDK against
`rag.py serve`, streamed and not. Run by .ci/run in a throwaway virtual
environment that has both packages; prints one PASS or FAIL line per check.

    python .ci/sdk_check.py        (needs: pip install mcp openai)
"""

import asyncio
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RAG = os.path.join(HERE, "..", "rag.py")
DOCS = os.path.join(HERE, "..", "examples", "docs")
QUESTION = "How long does a refund take?"
# A three-turn conversation whose follow-up, alone, the documents do not answer.
CONVERSATION = [{"role": "user", "content": "How do I request a refund?"},
                {"role": "assistant", "content": 'Open your order page and choose "Return an item" [1].'},
                {"role": "user", "content": "How long does it take?"}]


def check(name, fn):
    try:
        detail = fn()
    except Exception as e:  # report and go on: the other check still runs
        print(f"FAIL {name}: {type(e).__name__}: {e}")
        return False
    print(f"PASS {name}: {detail}")
    return True


def attr(obj, snake):
    """A result field by its name in mcp 2.x (is_error) or 1.x (isError)."""
    camel = re.sub(r"_(\w)", lambda m: m.group(1).upper(), snake)
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def mcp_check(db):
    from mcp import Client, StdioServerParameters
    import importlib.metadata as md

    async def run():
        params = StdioServerParameters(command=sys.executable, args=[RAG, "mcp", "--db", db])
        async with Client(params) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            assert tools == ["ask", "search", "stats"], tools
            found = await client.call_tool("search", {"question": QUESTION, "k": 2})
            assert not attr(found, "is_error"), found
            passages = attr(found, "structured_content")["passages"]
            assert len(passages) == 2 and re.search(r"refunds\.md:\d+-\d+$", passages[0]["source"]), passages
            asked = await client.call_tool("ask", {"question": QUESTION})
            answer = attr(asked, "structured_content")
            assert not attr(asked, "is_error") and not answer["refused"], asked
            assert "Sources:" in asked.content[0].text, asked.content[0].text
            follow = attr(await client.call_tool("ask", {"question": CONVERSATION[-1]["content"],
                                                         "conversation": CONVERSATION[:-1]}), "structured_content")
            assert not follow["refused"] and "5 to 7" in follow["answer"], follow
            bad = await client.call_tool("search", {"question": 42})
            assert attr(bad, "is_error"), bad
            return (f"mcp {md.version('mcp')}: tools {tools}; search gave {passages[0]['source']}; "
                    f"ask answered {answer['answer'][:60]!r}; the follow-up in its conversation searched as "
                    f"{follow['search_query']!r}; a bad argument is a tool error")
    return asyncio.run(run())


def openai_check(db):
    import openai
    key = "ci-" + os.urandom(8).hex()
    server = subprocess.Popen([sys.executable, RAG, "serve", "--db", db, "--port", "0", "--api-key", key],
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()
        port = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert port, f"no address in {line!r}"
        base = f"http://127.0.0.1:{port.group(1)}/v1"
        client = openai.OpenAI(base_url=base, api_key=key, max_retries=0)
        models = [m.id for m in client.models.list()]
        reply = client.chat.completions.create(model=models[0], messages=[{"role": "user", "content": QUESTION}])
        text = reply.choices[0].message.content
        assert "[1]" in text and "Sources:" in text, text
        pieces = [c.choices[0].delta.content or "" for c in client.chat.completions.create(
            model=models[0], messages=[{"role": "user", "content": QUESTION}], stream=True) if c.choices]
        assert "".join(pieces) == text, ("".join(pieces), text)
        follow = client.chat.completions.create(model=models[0], messages=CONVERSATION).to_dict()
        said, rag = follow["choices"][0]["message"]["content"], follow["rag"]
        assert not rag["refused"] and "5 to 7 business days" in said and "refunds.md" in said, follow
        assert rag["search_query"] != CONVERSATION[-1]["content"], rag["search_query"]
        alone = client.chat.completions.create(model=models[0], messages=CONVERSATION[-1:]).to_dict()
        assert alone["rag"]["refused"], alone
        try:
            openai.OpenAI(base_url=base, api_key="wrong", max_retries=0).models.list()
            raise AssertionError("a wrong key was accepted")
        except openai.AuthenticationError:
            pass
        return (f"openai {openai.__version__}: models {models}; answer {text.splitlines()[0][:60]!r}; "
                f"streamed in {len(pieces)} chunks, same text; the follow-up {CONVERSATION[-1]['content']!r} "
                f"searched as {rag['search_query']!r} and answered {said.splitlines()[0][:50]!r} "
                "(alone: refused); a wrong key gets 401")
    finally:
        server.terminate()
        server.wait(30)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "rag.db")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_", "EMBED_", "RERANK_"))}
        os.environ.clear()
        os.environ.update(env)  # offline: built-in embedder, extractive answers
        subprocess.run([sys.executable, RAG, "index", DOCS, "--db", db], check=True, capture_output=True)
        ok = [check("MCP Python SDK -> rag.py mcp", lambda: mcp_check(db)),
              check("OpenAI Python SDK -> rag.py serve", lambda: openai_check(db))]
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
