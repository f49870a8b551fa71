"""How ``lucy autograde --scheduler`` reaches a Dask scheduler, and why that should be a TLS one.

Whoever can talk to a Dask scheduler can run any function on its workers, and the workers
grade as root in the course folder. A ``tcp://`` scheduler takes that from every process
that reaches its port. A ``tls://`` scheduler started with the course's own certificate
authority takes only clients and workers that hold a certificate the authority signed:
Dask's TLS is mutual. The client's side is Dask's own settings, given on the command line
or read from Dask's configuration (``distributed.comm.tls.ca-file``,
``distributed.comm.tls.client.cert``, ``distributed.comm.tls.client.key``). Every way
the connection can fail before a job starts ends in one ``SchedulerUnreachable`` that
says what to check, not in a Dask traceback.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from ..errors import SchedulerUnreachable

if TYPE_CHECKING:
    from distributed import Client
    from distributed.security import Security


@dataclass(frozen=True)
class TlsFiles:
    """The client's side of a TLS scheduler, in PEM files: the course's certificate authority, and
    this client's certificate and key (the key may follow the certificate in one file)."""
    ca_file: str | None = None
    cert: str | None = None
    key: str | None = None


def scheme(address: str) -> str:
    """Dask reads an address without a scheme as ``tcp://``."""
    return address.split("://", 1)[0] if "://" in address else "tcp"


def open_to_anyone(address: str) -> str | None:
    """The warning for a scheduler that neither encrypts nor asks who connects, or None."""
    if scheme(address) != "tcp":
        return None
    return (f"WARNING: the scheduler at {address} is plain tcp: any process that reaches its port can run code "
            "on the workers, as the user they grade as. Use a tls:// scheduler "
            "(README: A class on a server).")


def security(address: str, tls: TlsFiles) -> Security:
    """Dask's ``Security`` from the files given, the rest from Dask's configuration; refused when a
    ``tls://`` scheduler would get no certificate, or a file named is not there."""
    from distributed.security import Security  # noqa: PLC0415 - deferred: Dask takes seconds to import

    given = {name: value for name, value in (("tls_ca_file", tls.ca_file), ("tls_client_cert", tls.cert),
                                             ("tls_client_key", tls.key)) if value}
    settings = Security(**given)
    client = settings.get_tls_config_for_role("client")
    for option, path in (("--tls-ca-file", client["ca_file"]), ("--tls-cert", client["cert"]),
                         ("--tls-key", client["key"])):
        if path and "\n" not in path and not Path(path).is_file():  # Dask also takes the PEM text itself
            raise SchedulerUnreachable(f"{option} {path}: no such file")
    if scheme(address) == "tls" and not (client["ca_file"] and client["cert"]):
        raise SchedulerUnreachable(f"{address} is a TLS scheduler, and this client has no certificate for it: give "
                                   "--tls-ca-file, --tls-cert and --tls-key, or set Dask's distributed.comm.tls.ca-file, "
                                   "distributed.comm.tls.client.cert and distributed.comm.tls.client.key")
    return settings


def _why(address: str, error: Exception) -> str:
    from distributed.comm.core import CommClosedError  # noqa: PLC0415 - deferred, as above

    if isinstance(error, CommClosedError):
        reason = ("the handshake failed: the scheduler wants tls:// where tcp:// was given, or its certificate "
                  "and this client's are not signed by one certificate authority, the --tls-ca-file")
    elif "encryption required" in str(error):
        reason = "the TLS settings require a tls:// address"
    elif "Timed out" in str(error):
        reason = "nothing answered in time: is the scheduler running, and is the address right?"
    else:
        reason = "the address or the TLS settings are not usable"
    return f"no Dask scheduler to grade with at {address}: {reason} ({type(error).__name__}: {error})"


@contextmanager
def connect(address: str, tls: TlsFiles | None = None) -> Iterator[Client]:
    """A Dask client of the scheduler at ``address``, closed on leaving; ``SchedulerUnreachable``
    when there is none to talk to. Dask's ``distributed.comm.timeouts.connect`` (30 s) bounds the wait."""
    from distributed import Client  # noqa: PLC0415 - deferred, as above

    settings = security(address, tls or TlsFiles())
    try:
        client = Client(address, security=settings)
    # Dask's comm errors are OSErrors, a bad address is a ValueError, and a tcp:// address where its
    # settings require encryption a RuntimeError.
    except (OSError, TypeError, ValueError, RuntimeError) as error:
        raise SchedulerUnreachable(_why(address, error)) from None
    with client:
        yield client
