"""PubSub contract (LocalPubSub and RedisPubSub; for Redis, "nodes" are separate RedisPubSub
instances with their own connections), then Redis reconnects through a cuttable TCP relay."""
from __future__ import annotations

import asyncio

import pytest

from app.infra.pubsub import MessagesLost
from tests.conftest import REDIS_URL
from tests.infra.conftest import wait_until


async def drain(subscription, count: int, timeout: float = 3.0) -> list[bytes]:
    out: list[bytes] = []

    async def read() -> None:
        async for data in subscription:
            out.append(data)
            if len(out) == count:
                return

    await asyncio.wait_for(read(), timeout)
    return out


async def nothing_pending(subscription, wait: float = 0.1) -> bool:
    await asyncio.sleep(wait)
    return subscription.pending() == 0


async def redis_subscribers(redis_client, prefix: str, channel: str) -> int:
    [(_, count)] = await redis_client.pubsub_numsub(f"{prefix}ch:{channel}")
    return count


# --------------------------------------------------------------------------- contract
async def test_delivers_to_every_subscriber_of_the_channel_in_order_and_to_no_other(make_pubsub):
    node_a = await make_pubsub()
    node_b = await make_pubsub()
    async with node_a.subscribe("match:1") as a1, node_a.subscribe("match:1") as a2, \
            node_b.subscribe("match:1") as b1, node_b.subscribe("match:2") as other:
        sent = [f"event {i}".encode() for i in range(100)]
        for i, data in enumerate(sent):
            await node_a.publish("match:1", data if i % 2 else data.decode())  # bytes or str
        await node_b.publish("match:2", b"for match 2 only")
        for subscription in (a1, a2, b1):
            assert await drain(subscription, 100) == sent
        assert await drain(other, 1) == [b"for match 2 only"]
        for subscription in (a1, a2, b1):
            assert await nothing_pending(subscription)


async def test_messages_published_before_subscribing_are_not_delivered(make_pubsub):
    pubsub = await make_pubsub()
    await pubsub.publish("ch", "early")
    async with pubsub.subscribe("ch") as subscription:
        await pubsub.publish("ch", "late")
        assert await drain(subscription, 1) == [b"late"]
        assert await nothing_pending(subscription)


async def test_leaving_the_context_cleans_up(make_pubsub, kind, prefix):
    pubsub = await make_pubsub()
    async with pubsub.subscribe("ch") as first:
        async with pubsub.subscribe("ch") as second:
            assert pubsub.channels() == {"ch": 2}
        assert pubsub.channels() == {"ch": 1}
        with pytest.raises(StopAsyncIteration):  # a closed subscription ends its iteration
            await second.get()
        await pubsub.publish("ch", "still here")
        assert await drain(first, 1) == [b"still here"]
    assert pubsub.channels() == {}
    if kind == "redis":  # the node's Redis subscription is gone too
        from redis.asyncio import Redis

        client = Redis.from_url(REDIS_URL)
        try:
            assert await redis_subscribers(client, prefix, "ch") == 0
        finally:
            await client.aclose()


async def test_cleans_up_when_the_body_raises_or_is_cancelled(make_pubsub):
    pubsub = await make_pubsub()
    with pytest.raises(ZeroDivisionError):
        async with pubsub.subscribe("ch"):
            raise ZeroDivisionError("the body fails")
    assert pubsub.channels() == {}

    entered = asyncio.Event()

    async def listener() -> None:
        async with pubsub.subscribe("ch") as subscription:
            entered.set()
            async for _ in subscription:
                pass

    task = asyncio.create_task(listener())
    await asyncio.wait_for(entered.wait(), 3)
    assert pubsub.channels() == {"ch": 1}
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pubsub.channels() == {}


async def test_a_slow_subscriber_gets_messages_lost_then_continues(make_pubsub):
    pubsub = await make_pubsub(queue_size=5)
    async with pubsub.subscribe("ch") as subscription:
        for i in range(8):
            await pubsub.publish("ch", str(i))
        assert await wait_until(lambda: subscription.dropped == 3)  # all 8 arrived; 3 did not fit
        assert await drain(subscription, 5) == [b"0", b"1", b"2", b"3", b"4"]
        with pytest.raises(MessagesLost) as lost:
            await subscription.get()
        assert lost.value.reason == "overflow"
        await pubsub.publish("ch", "after")
        assert await drain(subscription, 1) == [b"after"]  # same subscription, iterated again


async def test_close_ends_every_subscription(make_pubsub):
    pubsub = await make_pubsub()
    received: list[bytes] = []
    entered = asyncio.Event()

    async def listener() -> None:
        async with pubsub.subscribe("ch") as subscription:
            entered.set()
            async for data in subscription:
                received.append(data)

    task = asyncio.create_task(listener())
    await asyncio.wait_for(entered.wait(), 3)
    await pubsub.publish("ch", "one")
    assert await wait_until(lambda: received == [b"one"])
    await pubsub.close()
    await asyncio.wait_for(task, 3)  # the listener's loop ended normally
    assert pubsub.channels() == {}


async def test_rejects_other_message_types(make_pubsub):
    pubsub = await make_pubsub()
    with pytest.raises(TypeError):
        await pubsub.publish("ch", 42)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- Redis only
@pytest.mark.redis
@pytest.mark.parametrize("kind", ["redis"], indirect=True)
async def test_one_redis_subscription_per_channel_per_node(make_pubsub, redis_client, prefix):
    node_a = await make_pubsub()
    node_b = await make_pubsub()
    async with node_a.subscribe("ch") as _, node_a.subscribe("ch") as _, node_a.subscribe("ch") as _, \
            node_b.subscribe("ch") as _, node_a.subscribe("other") as _:
        assert await redis_subscribers(redis_client, prefix, "ch") == 2  # one per node
        assert node_a.connections == 1  # every channel on one connection
        assert await redis_subscribers(redis_client, prefix, "other") == 1
    assert await redis_subscribers(redis_client, prefix, "ch") == 0
    assert await redis_subscribers(redis_client, prefix, "other") == 0


@pytest.mark.redis
@pytest.mark.parametrize("kind", ["redis"], indirect=True)
async def test_reconnects_after_redis_drops_and_reports_the_gap(make_pubsub, proxy, redis_client, prefix):
    listener = await make_pubsub(url=proxy.url)
    publisher = await make_pubsub()  # not through the relay
    async with listener.subscribe("ch") as subscription:
        await publisher.publish("ch", "before")
        assert await drain(subscription, 1) == [b"before"]
        proxy.refusing = True
        assert proxy.cut() >= 1
        assert await wait_until(lambda: not listener.connected, timeout=3)
        await publisher.publish("ch", "while down")  # nobody on this node can hear it
        proxy.refusing = False
        with pytest.raises(MessagesLost) as lost:
            await asyncio.wait_for(subscription.get(), 5)
        assert lost.value.reason == "reconnect"
        assert listener.connections == 2
        # after MessagesLost the channel is subscribed again: nothing published from now on is lost
        await publisher.publish("ch", "after")
        assert await drain(subscription, 1) == [b"after"]
    assert await redis_subscribers(redis_client, prefix, "ch") == 0


@pytest.mark.redis
@pytest.mark.parametrize("kind", ["redis"], indirect=True)
async def test_subscribing_while_redis_is_down_waits_then_fails(make_pubsub, proxy):
    proxy.refusing = True
    pubsub = await make_pubsub(url=proxy.url, subscribe_timeout=0.5)
    from redis.exceptions import ConnectionError as RedisConnectionError

    with pytest.raises(RedisConnectionError):
        async with pubsub.subscribe("ch"):
            pass
    assert pubsub.channels() == {}
    proxy.refusing = False  # and it recovers
    async with pubsub.subscribe("ch") as subscription:
        await pubsub.publish("ch", "ok")
        assert await drain(subscription, 1) == [b"ok"]


@pytest.mark.redis
@pytest.mark.parametrize("kind", ["redis"], indirect=True)
async def test_an_idle_connection_stays_up_and_a_silent_one_is_replaced(make_pubsub, proxy):
    listener = await make_pubsub(url=proxy.url, keepalive_seconds=0.3)
    publisher = await make_pubsub()
    async with listener.subscribe("ch") as subscription:
        await asyncio.sleep(1.0)  # idle: PINGs are answered, nothing reconnects
        assert listener.connections == 1
        proxy.frozen = True  # the network goes silent without closing anything
        assert await wait_until(lambda: not listener.connected, timeout=3)
        proxy.frozen = False
        proxy.cut()  # drop the frozen relay connections so the old ones do not linger
        with pytest.raises(MessagesLost):
            await asyncio.wait_for(subscription.get(), 5)
        await publisher.publish("ch", "after")
        assert await drain(subscription, 1) == [b"after"]
        assert listener.connections == 2


async def test_subscribers_counts_nodes_listening_on_a_channel(make_pubsub, kind):
    """``subscribers`` tells whether any node listens on a channel (the cluster's liveness check)."""
    node_a = await make_pubsub()
    node_b = await make_pubsub()
    assert await node_b.subscribers("node:a") == 0
    async with node_a.subscribe("node:a"):
        assert await node_b.subscribers("node:a") == 1
    assert await node_b.subscribers("node:a") == 0


async def test_a_killed_subscriber_connection_is_noticed_and_reported_fast(make_pubsub, redis_client, prefix):
    """``CLIENT KILL`` of the subscriber connection (found by its name): the subscription gets
    ``MessagesLost`` within 2 s and delivers again afterwards."""
    node = await make_pubsub(client_name=f"{prefix}pubsub:test")
    async with node.subscribe("ch") as subscription:
        clients = [c for c in await redis_client.client_list(_type="pubsub") if c.get("name") == f"{prefix}pubsub:test"]
        assert len(clients) == 1
        await redis_client.client_kill_filter(_id=clients[0]["id"])
        with pytest.raises(MessagesLost):
            await asyncio.wait_for(subscription.get(), 2.0)
        await node.publish("ch", "after")
        assert await drain(subscription, 1) == [b"after"]


test_a_killed_subscriber_connection_is_noticed_and_reported_fast = pytest.mark.parametrize(
    "kind", ["redis"])(test_a_killed_subscriber_connection_is_noticed_and_reported_fast)
