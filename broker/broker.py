"""The Broker: a message store behind a remoting server, one handler per request code.

:class:`Broker` wires the parts together the way Apache's ``BrokerController`` does -- topic table,
consumer offsets, client tables, queue locks, long polling, delay levels, transactions, NameServer
registration -- and runs the periodic chores. Once its store is open it hands the running parts
(:class:`~broker.parts.BrokerParts`) to :func:`~broker.handlers.build_handlers`, then wraps each handler
of that table (bad-request answers, ACL, the send gate) and registers it; no handler sees the broker
itself. ``start()`` binds the port (``listenPort`` 0 picks a free one, written back into the config),
opens and recovers the store, registers with the NameServers;
``close()`` unregisters, stops serving and closes the store cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from broker.acl import PlainAclManager, acl_guarded, acl_guarded_inline
from broker.auth import AuthMetadata, AuthService, auth_guarded, auth_guarded_inline
from broker.clients import ConsumerManager, ProducerManager
from broker.clock import Clock, SystemClock
from broker.config import BROKER_VERSION, BrokerConfig
from broker.flow_control import SEND_REQUEST_CODES, SendFlowControl
from broker.ha.service import HighAvailability
from broker.ha.sync import SlaveSynchronizer
from broker.handlers import build_handlers
from broker.locks import RebalanceLockManager
from broker.long_polling import PullRequestHoldService
from broker.message_service import MessageService
from broker.metrics import start_metrics
from broker.parts import BrokerParts, Clients, Metadata, Services, Storage
from broker.periodic import PeriodicTask
from broker.pop.request_modes import MessageRequestModeManager
from broker.pop.service import PopService
from broker.processors.common import AnswersInline, guarded, guarded_inline
from broker.processors.pull import PullMessageProcessor
from broker.registration import ChangeAnnouncer, NameServerRegistration, RegistrationResult
from broker.schedule import ScheduleMessageService
from broker.sql92 import ExpressionCompiler
from broker.stats import BrokerStats
from broker.store import ConsumerOffsetStore, MessageStore, TopicConfigStore
from broker.subscription_groups import SubscriptionGroupManager
from broker.timer import TimerMessageService, build_timer
from broker.topic_config_manager import TopicConfigManager
from broker.transaction import TransactionalMessageService
from broker.vip_channel import start_vip_server, vip_port
from nameserver.metrics_http import MetricsEndpoint, MetricsExporterType
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.topic_config import DataVersion
from rocketmq_wire.headers.consumer import NotifyConsumerIdsChangedRequestHeader
from rocketmq_wire.headers.transaction import CheckTransactionStateRequestHeader
from rocketmq_wire.message.ids import UniqueIdGenerator
from rocketmq_wire.transport import Connection, Handler, RemotingClient, RemotingError, RemotingServer
from rocketmq_wire.transport.dispatch import RequestGate
from rocketmq_wire.transport.tls import TlsConfig, TlsMode

#: How often checkpoints whose invisible time ran out are revived (Apache scans its revive queues as often).
POP_REVIVE_PERIOD_MS = 1000

log = logging.getLogger("broker")

#: How often client tables are scanned for members that stopped sending heartbeats (Apache: 10 s).
CLIENT_SCAN_PERIOD_MS = 10_000


class BrokerNotStartedError(RuntimeError):
    """A part that only exists while the broker runs was asked for before ``start()``."""


class Broker:
    """One broker. Use ``async with Broker(config) as broker:`` or call :meth:`start` / :meth:`close`."""

    def __init__(
        self, config: BrokerConfig, *, clock: Clock | None = None, tls: TlsConfig | None = None
    ) -> None:
        config.validate()
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self.stats = BrokerStats(self.clock)
        self.config_version = DataVersion(timestamp=self.clock.now_ms(), counter=0)
        config_dir = config.config_dir
        self.consumer_offsets = ConsumerOffsetStore(config_dir, clock=self.clock.now_ms)
        self.topic_config_manager = TopicConfigManager(
            config, TopicConfigStore(config_dir, clock=self.clock.now_ms)
        )
        self.subscription_groups = SubscriptionGroupManager(
            config.auto_create_subscription_group, clock=self.clock.now_ms
        )
        self.consumer_manager = ConsumerManager(self._consumer_group_changed)
        self.producer_manager = ProducerManager()
        self.lock_manager = RebalanceLockManager(self.clock, config.rebalance_lock_max_live_time)
        self.unique_ids = UniqueIdGenerator(config.broker_ip1, clock=self.clock.now_ms)
        # Apache's TLS settings; None serves plain connections only (what tests and embedding want).
        self._listener = tls.listener() if tls is not None else (TlsMode.DISABLED, None)
        self.server = RemotingServer(
            config.listen_host,
            config.listen_port,
            ssl=self._listener[1],
            tls_mode=self._listener[0],
            response_version=BROKER_VERSION,
            **config.remoting_limits(),
        )
        to_namesrv = tls.client_context() if tls is not None and tls.server_client_uses_tls else None
        self._namesrv_client = RemotingClient(ssl=to_namesrv)
        self.registration = NameServerRegistration(config, self.topic_config_manager, self._namesrv_client)
        self.registration.on_registered(self._registered)
        self._store: MessageStore | None = None
        self._messages: MessageService | None = None
        self._schedule: ScheduleMessageService | None = None
        self._timer: TimerMessageService | None = None
        self._transactions: TransactionalMessageService | None = None
        self._pull_holder: PullRequestHoldService | None = None
        self._pop: PopService | None = None
        self._request_modes = MessageRequestModeManager(config.config_dir)
        self._pull: PullMessageProcessor | None = None
        self._send_flow_control: SendFlowControl | None = None
        self._ha: HighAvailability | None = None
        self._parts: BrokerParts | None = None
        self._vip_server: RemotingServer | None = None
        #: The Prometheus endpoint (broker/metrics.py), while running with metricsExporterType=PROM.
        self.metrics: MetricsEndpoint | None = None
        #: The ACL rules in force, when ``aclEnable`` is true (read at start; a bad file stops the start).
        self.acl: PlainAclManager | None = PlainAclManager(config.acl_path) if config.acl_enable else None
        #: ACL 2.0, when ``authenticationEnabled`` or ``authorizationEnabled`` is true (users read at start).
        self.auth: AuthService | None = (
            AuthService(config, AuthMetadata(config_dir))
            if config.authentication_enabled or config.authorization_enabled
            else None
        )
        self._handlers: dict[int, tuple[Handler, RequestGate | None]] = {}
        self._chores: list[PeriodicTask] = []
        self._tasks: set[asyncio.Task[None]] = set()
        #: Registers again after topic changes; processors wait on it as Apache's register inside the request.
        self.announcer = ChangeAnnouncer(self.registration.register_all)
        self._started = False

    # -- parts that exist while running -------------------------------------------------------------------

    @property
    def store(self) -> MessageStore:
        if self._store is None:
            raise BrokerNotStartedError("the broker has no store until it is started")
        return self._store

    @property
    def messages(self) -> MessageService:
        if self._messages is None:
            raise BrokerNotStartedError("the broker is not started")
        return self._messages

    @property
    def schedule(self) -> ScheduleMessageService:
        if self._schedule is None:
            raise BrokerNotStartedError("the broker is not started")
        return self._schedule

    @property
    def timer(self) -> TimerMessageService:
        if self._timer is None:
            raise BrokerNotStartedError("the broker is not started")
        return self._timer

    @property
    def transactions(self) -> TransactionalMessageService:
        if self._transactions is None:
            raise BrokerNotStartedError("the broker is not started")
        return self._transactions

    @property
    def pull_holder(self) -> PullRequestHoldService:
        if self._pull_holder is None:
            raise BrokerNotStartedError("the broker is not started")
        return self._pull_holder

    @property
    def pop(self) -> PopService:
        if self._pop is None:
            raise RuntimeError("the broker is not started")
        return self._pop

    @property
    def send_flow_control(self) -> SendFlowControl:
        """The gate in front of the send handlers (fast failure), with its queue figures."""
        if self._send_flow_control is None:
            raise BrokerNotStartedError("the broker is not started")
        return self._send_flow_control

    @property
    def ha(self) -> HighAvailability:
        """This broker's part in master/slave replication (HA port, slave link, metadata sync)."""
        if self._ha is None:
            raise BrokerNotStartedError("the broker is not started")
        return self._ha

    @property
    def parts(self) -> BrokerParts:
        """The running parts, as the request handlers were given them."""
        if self._parts is None:
            raise BrokerNotStartedError("the broker is not started")
        return self._parts

    @property
    def address(self) -> str:
        """Where clients reach this broker (``brokerIP1:listenPort``), also what it registers."""
        return self.config.broker_addr

    @property
    def is_running(self) -> bool:
        return self._started

    # -- lifecycle ----------------------------------------------------------------------------------------

    async def __aenter__(self) -> Broker:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def start(self) -> None:
        if self._started:
            return
        config = self.config
        if not config.is_slave and config.broker_id != 0:
            # Apache's BrokerStartup does the same: whatever the file says, a master is broker 0.
            log.info("brokerId %d ignored: a %s is always broker 0", config.broker_id, config.broker_role)
            config.broker_id = 0
        requested_port = config.listen_port
        if self.acl is not None:
            self.acl.load()  # before binding: a broker that cannot read its ACL file must not serve
        if self.auth is not None:
            self.auth.start()  # likewise for ACL 2.0's users and policies
        self.server.register_default(self._starting)
        port = await self.server.start()
        if config.listen_port == 0:
            config.listen_port = port
        try:
            await self._open_store()
            self._ha = self._high_availability()
            await self._ha.start(requested_port)
        except BaseException:
            if self._schedule is not None:
                await self._schedule.stop()
            if self._timer is not None:
                await self._timer.stop()
            if self._store is not None:
                await self._store.stop()
            await self.server.close()
            raise
        self._register_handlers()
        self.server.register_default(None)
        self.server.on_connection_closed(self._connection_closed)
        self._vip_server = await start_vip_server(
            config.listen_host,
            vip_port(requested_port, config.listen_port),
            self._handlers,
            self._connection_closed,
            self._listener,
            config.remoting_limits(),
        )
        self.topic_config_manager.on_change(self._topics_changed)
        self._start_chores()
        self._started = True
        try:
            self.metrics = start_metrics(self.parts)  # None unless metricsExporterType=PROM
        except BaseException:
            await self.close()
            raise
        log.info(
            "broker %s (cluster %s, id %d) serving on %s, store %s, %s",
            config.broker_name,
            config.broker_cluster_name,
            config.broker_id,
            self.address,
            config.store_path_root_dir,
            config.flush_disk_type,
        )
        if config.namesrv_addrs:
            await self.registration.register_all()

    async def _open_store(self) -> None:
        config = self.config
        Path(config.store_path_root_dir).mkdir(parents=True, exist_ok=True)
        store = MessageStore(
            config.store_path_root_dir,
            config.store_config(),
            store_host=config.store_host,
            clock=self.clock.now_ms,
        )
        await asyncio.to_thread(store.open)
        try:
            await store.start()
            self.topic_config_manager.load()
            self.consumer_offsets.load()
        except BaseException:
            await store.stop()
            raise
        self._store = store
        self._messages = messages = MessageService(store, self.stats)
        metrics_on = MetricsExporterType.parse(config.metrics_exporter_type) is MetricsExporterType.PROM
        answered = self.stats.rpc_latency.long_polled if metrics_on else None
        self._pull_holder = holder = PullRequestHoldService(self.clock, self._serve_held_pull, answered)
        self.filters = ExpressionCompiler()
        self._pull = PullMessageProcessor(
            config=config,
            topics=self.topic_config_manager,
            groups=self.subscription_groups,
            offsets=self.consumer_offsets,
            consumers=self.consumer_manager,
            store=store,
            stats=self.stats,
            pull_holder=holder,
            filters=self.filters,
        )
        messages.on_arrival(holder.notify_arrival)
        self._schedule = ScheduleMessageService(
            messages,
            config.delay_levels_ms(),
            self.clock,
            config.config_dir,
            lambda topic: topic in self.topic_config_manager,
            config.store_host,
        )
        self._schedule.load()
        if not config.is_slave:  # a slave's store takes no writes: its master delivers delayed messages
            self._schedule.start()
        self._timer = build_timer(
            messages, self.clock, config, lambda topic: topic in self.topic_config_manager
        )
        await asyncio.to_thread(self._timer.load)
        if not config.is_slave:  # as delay levels: the master delivers
            self._timer.start()
        self._transactions = TransactionalMessageService(
            messages, self.consumer_offsets, config, self.clock, self._send_check
        )
        self._pop = PopService(
            config_dir=config.config_dir,
            clock=self.clock,
            store=store,
            messages=messages,
            offsets=self.consumer_offsets,
            topics=self.topic_config_manager,
            store_host=config.store_host,
        )
        self._pop.load()
        self._request_modes = MessageRequestModeManager(config.config_dir)
        self._request_modes.load()

    def _serve_held_pull(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        """A held pull is due (messages arrived or its time is up): answer it now, holding it no longer."""
        assert self._pull is not None  # made with the hold service, before any pull can be held
        return self._pull.process(request, conn, allow_suspend=False)

    def _high_availability(self) -> HighAvailability:
        synchronizer = SlaveSynchronizer(
            config=self.config,
            client=self._namesrv_client,
            topics=self.topic_config_manager,
            groups=self.subscription_groups,
            offsets=self.consumer_offsets,
            schedule=self.schedule,
        )
        return HighAvailability(
            config=self.config,
            clock=self.clock,
            store=self.store,
            messages=self.messages,
            synchronizer=synchronizer,
        )

    def _assemble_parts(self) -> BrokerParts:
        """The record of the running parts handed to the handlers (once the store and HA are up)."""
        return BrokerParts(
            config=self.config,
            clock=self.clock,
            stats=self.stats,
            config_version=self.config_version,
            on_config_changed=self.config_changed,
            storage=Storage(
                store=self.store,
                messages=self.messages,
                schedule=self.schedule,
                transactions=self.transactions,
                timer=self.timer,
            ),
            metadata=Metadata(
                topics=self.topic_config_manager,
                groups=self.subscription_groups,
                offsets=self.consumer_offsets,
            ),
            clients=Clients(
                consumers=self.consumer_manager,
                producers=self.producer_manager,
                locks=self.lock_manager,
                channel=self.server,
            ),
            services=Services(
                announcer=self.announcer,
                unique_ids=self.unique_ids,
                pull_holder=self.pull_holder,
                send_flow_control=self.send_flow_control,
                ha=self.ha,
                acl=self.acl,
                auth=self.auth,
                filters=self.filters,
                pop=self.pop,
                request_modes=self._request_modes,
            ),
        )

    def _register_handlers(self) -> None:
        """Build the handler table from the parts, wrap each handler and register it on both channels."""
        # One gate for every send code: they share Apache's send queue, hence its capacity and wait.
        self._send_flow_control = flow_control = SendFlowControl(self.config, self.store)
        self._parts = parts = self._assemble_parts()
        assert self._pull is not None
        table = build_handlers(parts, pull=self._pull)
        # Apache 5.3+ has no plain-ACL check left: with ACL 2.0 on, it alone decides (the plain file's admin
        # codes still answer, but its rules gate nothing).
        plain_acl = self.acl if self.auth is None else None
        if self.acl is not None and self.auth is not None:
            log.warning(
                "aclEnable and ACL 2.0 are both on: requests are checked by ACL 2.0 only, as Apache 5.3+"
            )
        # Timed outermost (refusals too, as Apache's remoting layer times every answer), and only when
        # metrics are exported: with them off the request path is unchanged.
        timing = None
        if MetricsExporterType.parse(self.config.metrics_exporter_type) is MetricsExporterType.PROM:
            timing = parts.stats.rpc_latency
        for code, handler in table.items():
            gate = flow_control if code in SEND_REQUEST_CODES else None
            wrapped = guarded(handler)
            if plain_acl is not None:  # checked before the handler; with ACL off the path is unchanged
                wrapped = acl_guarded(wrapped, plain_acl)
            if self.auth is not None:  # ACL 2.0 checks first (outermost), as Apache's pipeline runs first
                wrapped = auth_guarded(wrapped, self.auth)
            if timing is not None:
                wrapped = timing.wrap(wrapped)
            self._handlers[code] = (wrapped, gate)  # the VIP channel serves them too
            if isinstance(handler, AnswersInline) and gate is None:
                # A handler that never waits, on the hot path: answered as the request arrives (no task).
                answer_now = guarded_inline(handler.answer_now)
                if plain_acl is not None:
                    answer_now = acl_guarded_inline(answer_now, plain_acl)
                if self.auth is not None:
                    answer_now = auth_guarded_inline(answer_now, self.auth)
                if timing is not None:
                    answer_now = timing.wrap_inline(answer_now)
                self.server.register_inline(code, answer_now)
            else:
                # Sends start without a task: one that needs no wait (ASYNC_FLUSH) is answered without one.
                self.server.register(code, wrapped, gate=gate, eager=gate is not None)

    def _start_chores(self) -> None:
        config = self.config
        chores = [
            PeriodicTask(
                "register-broker",
                self.clock,
                lambda: self.registration.period_ms,
                self.registration.register_all,
            ),
            PeriodicTask(
                "persist-consumer-offsets",
                self.clock,
                lambda: config.flush_consumer_offset_interval,
                lambda: asyncio.to_thread(self.consumer_offsets.persist_if_dirty),
            ),
            PeriodicTask(
                "persist-delay-offsets",
                self.clock,
                lambda: config.flush_delay_offset_interval,
                self.schedule.persist_if_dirty,
            ),
            PeriodicTask(
                "timer-checkpoint",
                self.clock,
                lambda: config.timer_flush_interval_ms,
                self.timer.checkpoint_now,
            ),
            PeriodicTask(
                "clean-expired-files", self.clock, lambda: config.clean_resource_interval, self._clean_store
            ),
            PeriodicTask(
                "scan-idle-clients", self.clock, lambda: CLIENT_SCAN_PERIOD_MS, self._scan_idle_clients
            ),
        ]
        if not config.is_slave:  # check-backs re-store half messages: a master's work (startProcessorByHa)
            chores.append(
                PeriodicTask(
                    "check-transactions",
                    self.clock,
                    lambda: config.transaction_check_interval,
                    self.transactions.check_once,
                )
            )
        if not config.is_slave:  # revived messages are written: a master's work
            chores.append(
                PeriodicTask("pop-revive", self.clock, lambda: POP_REVIVE_PERIOD_MS, self.pop.revive_once)
            )
        if self.acl is not None:
            acl = self.acl
            chores.append(
                PeriodicTask(
                    "reload-acl", self.clock, lambda: config.acl_watch_interval_ms, acl.reload_if_changed
                )
            )
        chores.extend(self.ha.chores())
        for chore in chores:
            chore.start()
        self._chores = chores

    async def close(self) -> None:
        """Unregister from the NameServers, stop serving, save state and close the store; idempotent."""
        if not self._started:
            await self._namesrv_client.close()
            return
        self._started = False
        if self.metrics is not None:
            self.metrics.close()
            self.metrics = None
        for chore in self._chores:
            await chore.stop()
        self._chores = []
        await self.announcer.close()
        if self.config.namesrv_addrs:  # last, so no registration still under way can undo it
            await self.registration.unregister_all()
        await self.ha.close()
        await self.schedule.stop()
        await self.timer.stop()
        await self.pull_holder.close()
        if self._vip_server is not None:
            await self._vip_server.close()
        await self.server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._pop is not None:  # a write of the POP table under way finishes before the store closes
            await self._pop.drain_saves()
        self.consumer_offsets.persist()
        await self.store.stop()
        await self._namesrv_client.close()
        log.info("broker %s stopped", self.config.broker_name)

    # -- reacting to changes ------------------------------------------------------------------------------

    async def _starting(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        return request.make_response(ResponseCode.SYSTEM_BUSY, "the broker is starting, try again shortly")

    def _spawn(self, work: Coroutine[Any, Any, object], name: str) -> None:
        async def run() -> None:
            try:
                await work
            except RemotingError as exc:
                log.debug("%s: %s", name, exc)
            except Exception:
                log.exception("%s failed", name)

        task = asyncio.create_task(run(), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _topics_changed(self) -> None:
        """A topic changed: register again now rather than at the next cycle (routes appear at once)."""
        if self._started and self.config.namesrv_addrs:
            self.announcer.changed()

    def _registered(self, results: list[RegistrationResult]) -> None:
        """A registration round ended: a slave learns (or re-learns) its master from the answers."""
        if self._ha is not None:
            self._ha.registered(results)

    def config_changed(self, keys: list[str]) -> None:
        """Settings were updated through UPDATE_BROKER_CONFIG."""
        self.config_version.counter += 1
        self.config_version.timestamp = self.clock.now_ms()
        self.subscription_groups.auto_create = self.config.auto_create_subscription_group
        self.lock_manager.max_live_ms = self.config.rebalance_lock_max_live_time
        if self._store is not None:
            self._store.reconfigure(
                os_page_cache_busy_timeout_ms=self.config.os_page_cache_busy_time_out_mills
            )
        log.info("broker settings changed: %s", ", ".join(keys))
        if "serverChannelMaxIdleTimeSeconds" in keys:  # Apache's applies to channels opened from then on
            for server in (self.server, self._vip_server):
                if server is not None:
                    server.idle_timeout = self.config.server_channel_max_idle_time_seconds
        if "brokerPermission" in keys:
            self.topic_config_manager.routes_changed()

    def _consumer_group_changed(self, group: str, members: list[Connection]) -> None:
        """Tell every member of a consumer group to rebalance now (NOTIFY_CONSUMER_IDS_CHANGED, oneway)."""
        header = NotifyConsumerIdsChangedRequestHeader(consumer_group=group)
        for conn in members:
            if not conn.is_open:
                continue
            command = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, header)
            self._spawn(self.server.invoke_oneway(conn, command), "notify-consumer-ids-changed")

    def _connection_closed(self, conn: Connection) -> None:
        self.producer_manager.connection_closed(conn)

        def notify(group: str) -> bool:
            group_config = self.subscription_groups.find(group)
            enabled = group_config.notify_consumer_ids_changed_enable if group_config is not None else True
            return enabled and self.config.notify_consumer_ids_changed_enable

        self.consumer_manager.connection_closed(conn, notify)
        if self._pull_holder is not None:
            self._pull_holder.connection_closed(conn)

    async def _send_check(self, group: str, header: CheckTransactionStateRequestHeader, body: bytes) -> bool:
        conn = self.producer_manager.available_connection(group)
        if conn is None:
            return False
        command = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, header, body)
        try:
            await self.server.invoke_oneway(conn, command)
        except RemotingError as exc:
            log.warning("asking producer %s about a transaction failed: %s", conn.remote_address, exc)
            return False
        return True

    async def _clean_store(self) -> None:
        result = await asyncio.to_thread(self.store.clean_expired)
        if result.commit_log_segments or result.consume_queue_files or result.index_files:
            log.info("retention removed %s", result)

    def _scan_idle_clients(self) -> None:
        now = self.clock.now_ms()
        timeout = self.config.channel_expired_timeout
        idle = set(self.producer_manager.expired(now, timeout)) | set(
            self.consumer_manager.expired(now, timeout)
        )
        for conn in idle:
            log.warning("closing %s: no heartbeat for %d ms", conn.remote_address, timeout)
            conn.close("no heartbeat")

    # -- conveniences for tools and tests -----------------------------------------------------------------

    def topic_exists(self, topic: str) -> bool:
        return topic in self.topic_config_manager
