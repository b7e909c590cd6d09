"""Test helper: wraps a client's gRPC stubs so a test sees (and may
replace) the calls of chosen methods, per node address."""

from __future__ import annotations


def wrap_stubs(client, monkeypatch, **methods):
    """Replaces ``client._stub``: calls of each method named in ``methods``
    go to ``methods[name](real_stub, address, request, **kwargs)``; every
    other method is the real stub's."""
    real_stub = client._stub

    class Stub:
        def __init__(self, address):
            self.stub = real_stub(address)
            self.address = address

        def __getattr__(self, name):
            if name in methods:
                return lambda request, **kwargs: methods[name](self.stub, self.address, request, **kwargs)
            return getattr(self.stub, name)

    monkeypatch.setattr(client, "_stub", lambda address: Stub(address))
