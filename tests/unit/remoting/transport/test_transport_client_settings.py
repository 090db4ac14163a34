"""ClientSettings (the RemotingClient's plain settings) and ClientConfig (the validated form) agree."""

from dataclasses import asdict, fields

from rocketq.remoting.transport import ClientConfig, RemotingClient
from rocketq.remoting.transport.client_settings import ClientSettings


def test_same_fields_and_defaults() -> None:
    names = [f.name for f in fields(ClientSettings)]
    assert sorted(names) == sorted(ClientConfig.model_fields)
    assert asdict(ClientSettings()) == ClientConfig.model_validate({}).model_dump(include=set(names))


def test_client_takes_either_form() -> None:
    config = ClientConfig.model_validate({"connectTimeoutMillis": 1234, "clientWorkerThreads": 2})
    assert RemotingClient(config).config.connect_timeout_ms == 1234
    assert RemotingClient().config == ClientSettings()
    assert RemotingClient(ClientSettings(connect_timeout_ms=50)).config.connect_timeout_ms == 50
