"""``hetsched fn``: serverless functions on warm pilot jobs (slurm_plugin/deploy/functions.py, deploy/fn/)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import click

from .common import emit_json, fail, resolve_site

_STATE = click.option("--state", default="/var/lib/hetsched/fn", show_default=True,
                      type=click.Path(file_okay=False), help="Where the function registry and pilot logs live.")
_GATEWAY = click.option("--gateway", default="http://127.0.0.1:9830", show_default=True,
                        help="The gateway's HTTP address (`hetsched fn serve`).")


@click.group()
def fn() -> None:
    """Serverless functions on warm pilot jobs: deploy, invoke, serve the HTTP gateway."""


@fn.command("deploy")
@click.argument("name")
@click.option("--image", required=True, help="name[:tag] in the site's image store.")
@click.option("--class", "class_", required=True, help="A workload class of form 'function'.")
@click.option("--command", default='echo "$@"', show_default=True,
              help="Shell command run in the container per invocation; the arguments are \"$@\".")
@click.option("--site", default=None, help="Site file or bundled site name.")
@_STATE
def deploy_cmd(name: str, image: str, class_: str, command: str, site: str | None, state: str) -> None:
    """Register function NAME (image, class, command): the gateway serves it from then on."""
    from ..deploy.functions import Function, FunctionError, save
    from ..site import load_site

    try:
        path = save(state, Function(name, image, class_, command), load_site(resolve_site(site)))
    except FunctionError as err:
        fail(str(err))
    click.echo(f"deployed {name}: {path}")


def post(gateway: str, name: str, args: list[str], timeout: float = 300.0) -> dict:
    """POST an invocation to the gateway; returns its JSON answer (raises click errors on failure)."""
    req = urllib.request.Request(f"{gateway.rstrip('/')}/invoke/{name}", json.dumps({"args": args}).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as err:
        fail(f"{name}: {json.loads(err.read() or b'{}').get('error', err.reason)}")
    except (urllib.error.URLError, OSError) as err:
        fail(f"gateway {gateway} not reachable ({err}): is `hetsched fn serve` running?")


@fn.command()
@click.argument("name")
@click.argument("args", nargs=-1)
@_GATEWAY
@click.option("--json", "as_json", is_flag=True, help="Print the whole answer (stdout, exit, pilot, node, ms).")
def invoke(name: str, args: tuple[str, ...], gateway: str, as_json: bool) -> None:
    """Invoke function NAME with ARGS through the gateway; prints its output, exits with its status."""
    doc = post(gateway, name, list(args))
    if as_json:
        emit_json(doc)
    else:
        click.echo(doc["stdout"], nl=False)
    raise SystemExit(doc["exit"])


@fn.command()
@click.option("--site", default=None, help="Site file or bundled site name.")
@_STATE
@click.option("--listen", default="127.0.0.1:9830", show_default=True, help="HTTP host:port for invocations.")
@click.option("--pilot-listen", default="127.0.0.1:0", show_default=True,
              help="host:port the pilot jobs connect back to (0: any free port).")
@click.option("--runtime-root", default="/run/hetsched/fn", show_default=True,
              help="The OCI runtime's state directory for pilot containers.")
@click.option("--slurm-conf", default=None, type=click.Path(dir_okay=False))
def serve(site: str | None, state: str, listen: str, pilot_listen: str, runtime_root: str,
          slurm_conf: str | None) -> None:
    """Run the gateway until SIGTERM/SIGINT (pilots released, pending ones cancelled by id)."""
    import asyncio
    import signal

    from ..deploy.fn.gateway import Gateway
    from ..site import load_site
    from ..slurm import SlurmClient

    def addr(text: str) -> tuple[str, int]:
        host, _, port = text.rpartition(":")
        return host or "127.0.0.1", int(port)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        gw = Gateway(load_site(resolve_site(site)), state, SlurmClient(conf=slurm_conf), addr(listen),
                     addr(pilot_listen), runtime_root)
        await gw.serve(stop)

    asyncio.run(main())
