import argparse

from scripted_llm.server import serve


def main() -> None:
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible chat server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = serve(args.host, args.port)
    print(f"scripted_llm listening on http://{args.host}:{server.port}", flush=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
