"""The blocking admin facade keeps in step with :class:`~admin.Admin`: every public coroutine method is
there, with the same parameters (names, kinds, defaults), so a feature added to one is never missing from
the other."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

from admin import Admin, BlockingAdmin
from spark_connector.testing import LocalCluster


def _parameters(method: object) -> list[tuple[str, object, object]]:
    signature = inspect.signature(method)  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default) for p in list(signature.parameters.values())[1:]]


def _coroutine_methods() -> list[str]:
    return sorted(
        name
        for name, member in inspect.getmembers(Admin)
        if not name.startswith("_") and inspect.iscoroutinefunction(member)
    )


def test_every_admin_coroutine_has_a_blocking_twin_with_the_same_parameters() -> None:
    names = _coroutine_methods()
    assert len(names) > 80  # the whole admin surface, not an empty list compared with itself
    missing = [name for name in names if not callable(getattr(BlockingAdmin, name, None))]
    assert not missing, f"BlockingAdmin lacks {missing}"
    differing = [
        name
        for name in names
        if _parameters(getattr(Admin, name)) != _parameters(getattr(BlockingAdmin, name))
    ]
    assert not differing, f"BlockingAdmin's parameters differ from Admin's for {differing}"


def test_a_new_twin_answers_as_the_async_method(tmp_path: Path) -> None:
    """Two twins added with RocketMQ 5 (a topic's config, a broker's consume modes), against a broker."""
    with LocalCluster(tmp_path / "store") as local:
        with BlockingAdmin(local.namesrv_address) as admin:
            admin.create_topic("BlockingTwin", broker_addr=local.broker_address, read_queue_nums=3)
            config = admin.topic_config("BlockingTwin", local.broker_address)
            modes = admin.consume_modes(local.broker_address)

        async def directly() -> object:
            async with Admin(local.namesrv_address) as async_admin:
                return await async_admin.consume_modes(local.broker_address)

        assert (config.topic_name, config.read_queue_nums) == ("BlockingTwin", 3)
        assert modes == asyncio.run(directly())
