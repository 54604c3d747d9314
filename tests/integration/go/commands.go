package main

import (
	"context"
	"encoding/base64"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

type command func(env *runEnv) (int, error)

var commands map[string]command

func init() {
	commands = map[string]command{
		"send-sync":    cmdSend,
		"send-async":   cmdSendAsync,
		"send-oneway":  cmdSend,
		"send-orderly": cmdSend,
		"send-batch":   cmdSendBatch,
		"push-consume": cmdPushConsume,
		"route":        cmdRoute,
		"probe":        cmdProbe,
	}
}

// sendStatusNames are Java's SendStatus names for the Go client's primitive.SendStatus.
var sendStatusNames = map[primitive.SendStatus]string{
	primitive.SendOK:                "SEND_OK",
	primitive.SendFlushDiskTimeout:  "FLUSH_DISK_TIMEOUT",
	primitive.SendFlushSlaveTimeout: "FLUSH_SLAVE_TIMEOUT",
	primitive.SendSlaveNotAvailable: "SLAVE_NOT_AVAILABLE",
	primitive.SendUnknownError:      "UNKNOWN_ERROR",
}

func sendResultFields(result *primitive.SendResult) []field {
	name, ok := sendStatusNames[result.Status]
	if !ok {
		name = "UNKNOWN_" + strconv.Itoa(int(result.Status))
	}
	fields := []field{
		F("status", name),
		F("status_code", int(result.Status)),
		F("msg_id", result.MsgID),
		F("offset_msg_id", result.OffsetMsgID),
	}
	if result.MessageQueue != nil {
		fields = append(fields, F("queue_id", result.MessageQueue.QueueId),
			F("broker_name", result.MessageQueue.BrokerName))
	} else {
		fields = append(fields, F("queue_id", nil), F("broker_name", nil))
	}
	fields = append(fields, F("offset", result.QueueOffset))
	if result.TransactionID != "" {
		fields = append(fields, F("transaction_id", result.TransactionID))
	}
	return fields
}

// shardingSelector sends each message to queue key % queue count, recording what it chose. Sends are one
// at a time, so the key of the message being sent is simply the selector's current key.
type shardingSelector struct {
	mu       sync.Mutex
	key      int
	queues   int
	selected int
}

func (s *shardingSelector) Select(msg *primitive.Message, mqs []*primitive.MessageQueue, lastBroker string) *primitive.MessageQueue {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(mqs)
	index := ((s.key % n) + n) % n
	s.queues, s.selected = n, index
	return mqs[index]
}

func (s *shardingSelector) prepare(key int) {
	s.mu.Lock()
	s.key, s.queues, s.selected = key, 0, -1
	s.mu.Unlock()
}

func (s *shardingSelector) chosen() (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queues, s.selected
}

func startProducer(env *runEnv, selector producer.QueueSelector) (*producerHandle, error) {
	o := env.opts
	opts := []producer.Option{
		producer.WithGroupName(o.group),
		producer.WithNsResolver(primitive.NewPassthroughResolver(namesrvAddrs(o.namesrv))),
		producer.WithSendMsgTimeout(time.Duration(o.sendTimeoutMs) * time.Millisecond),
	}
	if o.retryTimes >= 0 {
		opts = append(opts, producer.WithRetry(o.retryTimes))
	}
	if o.instanceName != "" {
		opts = append(opts, producer.WithInstanceName(o.instanceName))
	}
	if creds, ok := credentials(o); ok {
		opts = append(opts, producer.WithCredentials(creds))
	}
	if selector != nil {
		opts = append(opts, producer.WithQueueSelector(selector))
	}
	env.state.setStage("start")
	p, err := producer.NewDefaultProducer(opts...)
	if err != nil {
		clientError("ProducerCreateFailed", err)
		return nil, err
	}
	if err := p.Start(); err != nil {
		clientError("ProducerStartFailed", err)
		return nil, err
	}
	out.emit("ready", F("role", "producer"), F("group", o.group), F("namesrv", o.namesrv), F("pid", os.Getpid()),
		F("serialize", o.serialize))
	return &producerHandle{p}, nil
}

type producerHandle struct {
	p interface {
		Shutdown() error
		SendSync(ctx context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error)
		SendAsync(ctx context.Context, f func(context.Context, *primitive.SendResult, error), msgs ...*primitive.Message) error
		SendOneWay(ctx context.Context, msgs ...*primitive.Message) error
	}
}

func (env *runEnv) sendContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Duration(env.opts.sendTimeoutMs)*time.Millisecond)
}

var sendErrorTypes = map[string]string{
	"send-sync":    "SendSyncFailed",
	"send-async":   "SendAsyncFailed",
	"send-oneway":  "SendOnewayFailed",
	"send-orderly": "SendOrderlyFailed",
	"send-batch":   "SendBatchFailed",
}

// cmdSend is send-sync, send-oneway and send-orderly: one client call per message, in order.
func cmdSend(env *runEnv) (int, error) {
	o := env.opts
	specs, err := parseSpecs(o, os.Stdin)
	if err != nil {
		return 0, err
	}
	var selector *shardingSelector
	var qs producer.QueueSelector
	if o.command == "send-orderly" {
		selector = &shardingSelector{}
		qs = selector
	}
	handle, err := startProducer(env, qs)
	if err != nil {
		return env.finish(nil, exitClientError), nil
	}
	code := exitOK
	for index, spec := range specs {
		env.state.set("send", index)
		msg := buildMessage(spec)
		ctx, cancel := env.sendContext()
		var sendErr error
		switch o.command {
		case "send-oneway":
			sendErr = handle.p.SendOneWay(ctx, msg)
			if sendErr == nil {
				out.emit("sent_oneway", F("index", index), F("topic", spec.Topic))
			}
		case "send-orderly":
			key := o.shardingKey
			if spec.ShardingKey != nil {
				key = *spec.ShardingKey
			}
			selector.prepare(key)
			var result *primitive.SendResult
			result, sendErr = handle.p.SendSync(ctx, msg)
			if sendErr == nil {
				queues, selected := selector.chosen()
				fields := append([]field{F("index", index), F("sharding_key", key)}, sendResultFields(result)...)
				fields = append(fields, F("queue_count", queues), F("selected_queue", selected))
				out.emit("send_result", fields...)
			}
		default:
			var result *primitive.SendResult
			result, sendErr = handle.p.SendSync(ctx, msg)
			if sendErr == nil {
				out.emit("send_result", append([]field{F("index", index)}, sendResultFields(result)...)...)
			}
		}
		cancel()
		if sendErr != nil {
			clientError(sendErrorTypes[o.command], sendErr, F("index", index))
			code = exitClientError
			if !o.keepGoing {
				break
			}
			continue
		}
		env.state.add(1)
	}
	if o.command == "send-oneway" {
		// A oneway send gets no answer, so nothing says the broker has read it yet: closing the
		// connection at once can reset it with the last frames still unread on the broker's side.
		env.state.set("oneway-drain", len(specs))
		time.Sleep(onewayDrain)
	}
	return env.finish(handle.p.Shutdown, code), nil
}

// onewayDrain is how long send-oneway waits before shutting its producer down.
const onewayDrain = time.Second

// cmdSendAsync sends every message with SendAsync, then waits for all the callbacks.
func cmdSendAsync(env *runEnv) (int, error) {
	o := env.opts
	specs, err := parseSpecs(o, os.Stdin)
	if err != nil {
		return 0, err
	}
	handle, err := startProducer(env, nil)
	if err != nil {
		return env.finish(nil, exitClientError), nil
	}
	var (
		mu      sync.Mutex
		failed  bool
		wg      sync.WaitGroup
		cancels []context.CancelFunc
	)
	fail := func(err error, index int) {
		mu.Lock()
		failed = true
		mu.Unlock()
		clientError("SendAsyncFailed", err, F("index", index))
	}
	for index, spec := range specs {
		env.state.set("send", index)
		msg := buildMessage(spec)
		var once sync.Once
		wg.Add(1)
		index := index
		// The client may call back twice for one send (v2.1.2's sendAsync reports a transport error,
		// then goes on to read the missing response); only the first call counts.
		callback := func(_ context.Context, result *primitive.SendResult, err error) {
			once.Do(func() {
				defer wg.Done()
				if err != nil {
					fail(err, index)
					return
				}
				if result == nil {
					fail(errNoResult, index)
					return
				}
				out.emit("send_result", append([]field{F("index", index)}, sendResultFields(result)...)...)
				env.state.add(1)
			})
		}
		ctx, cancel := env.sendContext() // cancelled once every callback came: it is the request's parent
		cancels = append(cancels, cancel)
		err := handle.p.SendAsync(ctx, callback, msg)
		if err != nil {
			once.Do(func() { wg.Done() })
			fail(err, index)
			if !o.keepGoing {
				break
			}
		}
	}
	env.state.setStage("await-callbacks")
	wg.Wait()
	for _, cancel := range cancels {
		cancel()
	}
	code := exitOK
	if failed {
		code = exitClientError
	}
	return env.finish(handle.p.Shutdown, code), nil
}

type noResult struct{}

func (noResult) Error() string { return "the send callback gave neither a result nor an error" }

var errNoResult error = noResult{}

// cmdSendBatch sends the messages in batches of --batch-size (0: all in one) through SendSync.
func cmdSendBatch(env *runEnv) (int, error) {
	o := env.opts
	specs, err := parseSpecs(o, os.Stdin)
	if err != nil {
		return 0, err
	}
	size := o.batchSize
	if size == 0 {
		size = len(specs)
	}
	handle, err := startProducer(env, nil)
	if err != nil {
		return env.finish(nil, exitClientError), nil
	}
	code := exitOK
	for index, first := 0, 0; first < len(specs); index, first = index+1, first+size {
		last := first + size
		if last > len(specs) {
			last = len(specs)
		}
		chunk := specs[first:last]
		env.state.set("send", index)
		msgs := make([]*primitive.Message, 0, len(chunk))
		for _, spec := range chunk {
			msgs = append(msgs, buildMessage(spec))
		}
		ctx, cancel := env.sendContext()
		result, sendErr := handle.p.SendSync(ctx, msgs...)
		cancel()
		if sendErr != nil {
			clientError("SendBatchFailed", sendErr, F("index", index), F("batch_size", len(chunk)))
			code = exitClientError
			if !o.keepGoing {
				break
			}
			continue
		}
		fields := append([]field{F("index", index), F("batch_size", len(chunk))}, sendResultFields(result)...)
		out.emit("send_result", fields...)
		env.state.add(len(chunk))
	}
	return env.finish(handle.p.Shutdown, code), nil
}

// describeMessage is everything the Go client tells about a received message, as JSON-ready fields.
func describeMessage(msg *primitive.MessageExt) []field {
	var tags, keys any
	if value := msg.GetTags(); value != "" {
		tags = value
	}
	if value := msg.GetKeys(); value != "" {
		keys = value
	}
	queueID, brokerName := -1, ""
	if msg.Queue != nil {
		queueID, brokerName = msg.Queue.QueueId, msg.Queue.BrokerName
	}
	delay := 0
	if value, err := strconv.Atoi(msg.GetProperty(primitive.PropertyDelayTimeLevel)); err == nil {
		delay = value
	}
	var broker any
	if brokerName != "" {
		broker = brokerName
	}
	return []field{
		F("topic", msg.Topic),
		F("queue_id", queueID),
		F("broker_name", broker),
		F("queue_offset", msg.QueueOffset),
		F("msg_id", msg.MsgId),
		F("offset_msg_id", msg.OffsetMsgId),
		F("tags", tags),
		F("keys", keys),
		F("properties", msg.GetProperties()),
		F("body_b64", base64.StdEncoding.EncodeToString(msg.Body)),
		F("body_len", len(msg.Body)),
		F("body_exact", true),
		F("reconsume_times", msg.ReconsumeTimes),
		F("delay_time_level", delay),
		F("store_size", msg.StoreSize),
		F("sys_flag", msg.SysFlag),
		F("born_timestamp", msg.BornTimestamp),
		F("born_host", msg.BornHost),
		F("store_timestamp", msg.StoreTimestamp),
		F("store_host", msg.StoreHost),
		F("commit_log_offset", msg.CommitLogOffset),
	}
}

// cmdPushConsume prints messages as the Go push consumer delivers them, until --count (then --linger
// seconds more) or the deadline; fewer than --count by then is exit 6.
func cmdPushConsume(env *runEnv) (int, error) {
	o := env.opts
	model := consumer.Clustering
	if o.broadcast {
		model = consumer.BroadCasting
	}
	from := consumer.ConsumeFromLastOffset
	if o.consumeFrom == "first" {
		from = consumer.ConsumeFromFirstOffset
	}
	opts := []consumer.Option{
		consumer.WithGroupName(o.group),
		consumer.WithNsResolver(primitive.NewPassthroughResolver(namesrvAddrs(o.namesrv))),
		consumer.WithConsumerModel(model),
		consumer.WithConsumerOrder(o.orderly),
		consumer.WithConsumeFromWhere(from),
	}
	if o.instanceName != "" {
		opts = append(opts, consumer.WithInstance(o.instanceName))
	}
	if creds, ok := credentials(o); ok {
		opts = append(opts, consumer.WithCredentials(creds))
	}
	if o.threadCount > 0 {
		opts = append(opts, consumer.WithConsumeGoroutineNums(o.threadCount))
	}
	if o.batchMaxSize > 0 {
		opts = append(opts, consumer.WithConsumeMessageBatchMaxSize(o.batchMaxSize))
	}
	env.state.setStage("start")
	c, err := consumer.NewPushConsumer(opts...)
	if err != nil {
		clientError("ConsumerCreateFailed", err)
		return env.finish(nil, exitClientError), nil
	}

	var (
		mu           sync.Mutex
		closed       bool
		failuresLeft = o.failFirst
		reached      = make(chan struct{})
		reachedOnce  sync.Once
	)
	if o.count == 0 {
		reachedOnce.Do(func() { close(reached) })
	}
	callback := func(ctx context.Context, msgs ...*primitive.MessageExt) (result consumer.ConsumeResult, err error) {
		defer func() {
			if r := recover(); r != nil {
				out.tryEmit("error", F("error_type", "CallbackPanic"), F("message", "in the message callback"))
				result, err = consumer.ConsumeRetryLater, nil
			}
		}()
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return consumer.ConsumeRetryLater, nil
		}
		if failuresLeft > 0 {
			failuresLeft--
			for _, msg := range msgs {
				out.emit("message", append(describeMessage(msg), F("consume_status", "RECONSUME_LATER"))...)
			}
			return consumer.ConsumeRetryLater, nil
		}
		for _, msg := range msgs {
			out.emit("message", append(describeMessage(msg), F("consume_status", "CONSUME_SUCCESS"))...)
			if env.state.add(1) >= o.count {
				reachedOnce.Do(func() { close(reached) })
			}
		}
		return consumer.ConsumeSuccess, nil
	}
	selector := consumer.MessageSelector{Type: consumer.TAG, Expression: o.expression}
	if err := c.Subscribe(o.topic, selector, callback); err != nil {
		clientError("SubscribeFailed", err)
		return env.finish(c.Shutdown, exitClientError), nil
	}
	if err := c.Start(); err != nil {
		clientError("ConsumerStartFailed", err)
		return env.finish(c.Shutdown, exitClientError), nil
	}
	role := "push-consumer"
	out.emit("ready", F("role", role), F("group", o.group), F("topic", o.topic), F("pid", os.Getpid()),
		F("serialize", o.serialize))
	env.state.setStage("consume")
	remaining := time.Until(env.started.Add(time.Duration(o.timeout * float64(time.Second))))
	complete := false
	select {
	case <-reached:
		complete = true
	case <-time.After(remaining):
	}
	if complete && o.linger > 0 {
		time.Sleep(time.Duration(o.linger * float64(time.Second)))
	}
	mu.Lock()
	closed = true
	mu.Unlock()
	code := exitOK
	if !complete {
		count := env.state.total()
		out.emit("error", F("error_type", "Incomplete"), F("message",
			strconv.Itoa(count)+" of "+strconv.Itoa(o.count)+" messages arrived within "+
				strconv.FormatFloat(o.timeout, 'f', -1, 64)+" s"),
			F("stage", "consume"), F("count", count), F("expected", o.count))
		code = exitIncomplete
	}
	return env.finish(c.Shutdown, code), nil
}

// cmdRoute lists the queues the Go client would publish to, through its admin package. The admin API
// gives queues only: no broker addresses (those are in the client's internal package).
func cmdRoute(env *runEnv) (int, error) {
	o := env.opts
	opts := []admin.AdminOption{admin.WithResolver(primitive.NewPassthroughResolver(namesrvAddrs(o.namesrv)))}
	if creds, ok := credentials(o); ok {
		opts = append(opts, admin.WithCredentials(creds))
	}
	env.state.setStage("start")
	a, err := admin.NewAdmin(opts...)
	if err != nil {
		clientError("AdminCreateFailed", err)
		return env.finish(nil, exitClientError), nil
	}
	out.emit("ready", F("role", "admin"), F("namesrv", o.namesrv), F("pid", os.Getpid()), F("serialize", o.serialize))
	env.state.setStage("route")
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(o.timeout*float64(time.Second)))
	defer cancel()
	mqs, err := a.FetchPublishMessageQueues(ctx, o.topic)
	if err != nil {
		clientError("RouteFailed", err, F("topic", o.topic))
		return env.finish(a.Close, exitClientError), nil
	}
	sort.Slice(mqs, func(i, j int) bool {
		if mqs[i].BrokerName != mqs[j].BrokerName {
			return mqs[i].BrokerName < mqs[j].BrokerName
		}
		return mqs[i].QueueId < mqs[j].QueueId
	})
	queues := make([]map[string]any, 0, len(mqs))
	for _, mq := range mqs {
		queues = append(queues, map[string]any{"broker_name": mq.BrokerName, "queue_id": mq.QueueId})
	}
	out.emit("route", F("topic", o.topic), F("queues", queues))
	env.state.add(len(queues))
	return env.finish(a.Close, exitOK), nil
}

// cmdProbe starts nothing: reports the Go client's module and version.
func cmdProbe(env *runEnv) (int, error) {
	out.emit("library", F("module", clientModule), F("version", clientVersion()), F("go", goVersion()),
		F("serialize", []string{"JSON", "ROCKETMQ"}), F("commands", commandNames))
	out.emit("done", F("command", "probe"), F("count", 0), F("elapsed_ms", 0), F("shutdown", "ok"))
	return exitOK, nil
}
