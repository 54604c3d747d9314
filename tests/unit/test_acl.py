"""ACL signing, checked against every signed frame mqadmin sent in the captures."""

from __future__ import annotations

import base64
import hashlib
import hmac

from rocketmq_wire import RemotingCommand
from rocketmq_wire.acl import AclCredentials, signature_of, verify
from tests.golden import load_golden

GOLDEN_SECRET = "12345678"  # Apache's conf/tools.yml, used by mqadmin in the captures


def test_known_hmac_output() -> None:
    fields = {"topic": "T", "AccessKey": "ak"}
    expected = base64.b64encode(hmac.new(b"sk", b"akT" + b"body", hashlib.sha1).digest()).decode()
    assert signature_of(fields, b"body", "sk") == expected


def test_every_signed_java_frame_verifies() -> None:
    signed = 0
    for f in load_golden():
        if not f.from_java or f.kind == "response":
            continue
        cmd = RemotingCommand.decode(f.frame)
        if cmd.fields().get("AccessKey") != "rocketmq2":
            continue
        assert verify(cmd, GOLDEN_SECRET), f.id
        assert not verify(cmd, "wrong-secret"), f.id
        signed += 1
    assert signed > 50


def test_sign_then_verify_and_tamper() -> None:
    cmd = RemotingCommand(code=105, ext_fields={"topic": "GoldenTopic"}, body=b"x")
    AclCredentials("rocketmq2", "12345678").sign(cmd)
    assert cmd.fields()["AccessKey"] == "rocketmq2"
    assert verify(RemotingCommand.decode(cmd.encode()), "12345678")
    assert cmd.ext_fields is not None
    cmd.ext_fields["topic"] = "Other"
    assert not verify(cmd, "12345678")


def test_signing_reproduces_the_captured_get_route_request() -> None:
    """mqadmin's GET_ROUTEINFO_BY_TOPIC for GoldenTopic carries this exact signature in both versions."""
    cmd = RemotingCommand(code=105, ext_fields={"topic": "GoldenTopic"})
    AclCredentials("rocketmq2", "12345678").sign(cmd)
    assert cmd.fields()["Signature"] == "Wj3KHdKHJzUFgki3OLcVbFixmt0="
