package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// options holds every command's options; each command's flag set defines only the ones it takes.
type options struct {
	command string

	// common
	namesrv         string
	group           string
	timeout         float64
	shutdownTimeout float64
	instanceName    string
	accessKey       string
	secretKey       string
	channel         string
	serialize       string

	// sends
	topic         string
	spec          string
	specGiven     bool
	body          string
	tags          string
	tagsGiven     bool
	keys          string
	keysGiven     bool
	properties    multiFlag
	delayLevel    int
	count         int
	sendTimeoutMs int
	retryTimes    int
	keepGoing     bool
	shardingKey   int
	batchSize     int

	// push-consume
	expression   string
	orderly      bool
	broadcast    bool
	threadCount  int
	batchMaxSize int
	failFirst    int
	linger       float64
	consumeFrom  string
}

// multiFlag is a flag that may be given more than once (--property).
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

var commandNames = []string{
	"send-sync", "send-async", "send-oneway", "send-orderly", "send-batch", "push-consume", "route", "probe",
}

func isSend(command string) bool { return strings.HasPrefix(command, "send-") }

func parseArgs(argv []string) (*options, error) {
	if len(argv) == 0 {
		return nil, usagef("no command given (one of %s)", strings.Join(commandNames, ", "))
	}
	o := &options{command: argv[0]}
	if _, ok := commands[o.command]; !ok {
		return nil, usagef("unknown command %q (one of %s)", o.command, strings.Join(commandNames, ", "))
	}
	fs := flag.NewFlagSet("gopeer "+o.command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Float64Var(&o.timeout, "timeout", 30.0, "seconds before the peer gives up")

	common := func(group string) {
		fs.StringVar(&o.namesrv, "namesrv", "", "NameServer address(es), HOST:PORT[;HOST:PORT]")
		fs.StringVar(&o.group, "group", group, "producer or consumer group")
		fs.Float64Var(&o.shutdownTimeout, "shutdown-timeout", 5.0, "seconds allowed for Shutdown()")
		fs.StringVar(&o.instanceName, "instance-name", "", "client instance name (default: the Go client's)")
		fs.StringVar(&o.accessKey, "access-key", "", "ACL AccessKey")
		fs.StringVar(&o.secretKey, "secret-key", "", "ACL SecretKey")
		fs.StringVar(&o.channel, "channel", "", "accepted for the C++ peer's sake; the Go client has none")
		fs.StringVar(&o.serialize, "serialize", "JSON", "request header serialization: JSON or ROCKETMQ")
	}

	switch {
	case isSend(o.command):
		common("GoPeerProducer")
		fs.StringVar(&o.topic, "topic", "", "default topic for messages that name none")
		fs.StringVar(&o.spec, "spec", "", "JSON message spec (object or list), or - to read it from stdin")
		fs.StringVar(&o.body, "body", "go-peer message {i}", "message body ({i}: running index)")
		fs.StringVar(&o.tags, "tags", "", "tags")
		fs.StringVar(&o.keys, "keys", "", "keys (space separated)")
		fs.Var(&o.properties, "property", "KEY=VALUE (repeatable)")
		fs.IntVar(&o.delayLevel, "delay-level", 0, "delay level")
		fs.IntVar(&o.count, "count", 1, "how many times to send each spec")
		fs.IntVar(&o.sendTimeoutMs, "send-timeout-ms", 3000, "send timeout in milliseconds")
		fs.IntVar(&o.retryTimes, "retry-times", -1, "retries of a failed send (-1: the Go client's default, 3)")
		fs.BoolVar(&o.keepGoing, "keep-going", false, "go on after a failed send")
		if o.command == "send-orderly" {
			fs.IntVar(&o.shardingKey, "sharding-key", 0, "int; the queue is key % queue count")
		}
		if o.command == "send-batch" {
			fs.IntVar(&o.batchSize, "batch-size", 0, "messages per batch (0: all in one)")
		}
	case o.command == "push-consume":
		common("GoPeerPushConsumer")
		fs.StringVar(&o.topic, "topic", "", "topic to subscribe to")
		fs.StringVar(&o.expression, "expression", "*", "tag expression, e.g. 'TagA || TagB'")
		fs.IntVar(&o.count, "count", -1, "messages to acknowledge before exiting")
		fs.Var(&o.properties, "property", "accepted for the C++ peer's sake: every property is reported")
		fs.BoolVar(&o.orderly, "orderly", false, "orderly consumption")
		fs.BoolVar(&o.broadcast, "broadcast", false, "broadcasting instead of clustering")
		fs.IntVar(&o.threadCount, "thread-count", 0, "consume goroutines (0: the client's default)")
		fs.IntVar(&o.batchMaxSize, "batch-max-size", 0, "messages per callback (0: the client's default)")
		fs.IntVar(&o.failFirst, "fail-first", 0, "answer ConsumeRetryLater to the first N deliveries")
		fs.Float64Var(&o.linger, "linger", 0.0, "seconds to keep printing after --count")
		fs.StringVar(&o.consumeFrom, "consume-from", "last", "where a new group starts: last, first")
		fs.IntVar(&o.sendTimeoutMs, "send-timeout-ms", 3000, "unused by consumers; accepted")
		fs.IntVar(&o.retryTimes, "retry-times", -1, "unused by consumers; accepted")
	case o.command == "route":
		common("GoPeerAdmin")
		fs.StringVar(&o.topic, "topic", "", "topic whose publish queues to list")
		fs.IntVar(&o.sendTimeoutMs, "send-timeout-ms", 3000, "unused; accepted")
		fs.IntVar(&o.retryTimes, "retry-times", -1, "unused; accepted")
	}

	if err := fs.Parse(argv[1:]); err != nil {
		return nil, usagef("%s: %v", o.command, err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("%s: unexpected arguments %q", o.command, fs.Args())
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	o.specGiven, o.tagsGiven, o.keysGiven = given["spec"], given["tags"], given["keys"]

	if o.timeout <= 0 {
		return nil, usagef("--timeout must be positive, got %v", o.timeout)
	}
	if o.command == "probe" {
		return o, nil
	}
	var missing []string
	if o.namesrv == "" {
		missing = append(missing, "--namesrv")
	}
	if (o.command == "push-consume" || o.command == "route") && o.topic == "" {
		missing = append(missing, "--topic")
	}
	if o.command == "push-consume" && !given["count"] {
		missing = append(missing, "--count")
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, usagef("%s: the following arguments are required: %s", o.command, strings.Join(missing, ", "))
	}
	if o.command == "push-consume" && o.count < 0 {
		return nil, usagef("--count must not be negative")
	}
	if isSend(o.command) && o.count < 0 {
		return nil, usagef("--count must not be negative")
	}
	if o.batchSize < 0 {
		return nil, usagef("--batch-size must not be negative")
	}
	switch strings.ToUpper(o.serialize) {
	case "JSON", "ROCKETMQ":
		o.serialize = strings.ToUpper(o.serialize)
	default:
		return nil, usagef("--serialize must be JSON or ROCKETMQ, got %q", o.serialize)
	}
	switch o.consumeFrom {
	case "", "last", "first":
	default:
		return nil, usagef("--consume-from must be last or first, got %q", o.consumeFrom)
	}
	return o, nil
}

// namesrvAddrs splits --namesrv on ';' (the Go client's resolvers take a list).
func namesrvAddrs(value string) []string {
	var addrs []string
	for _, part := range strings.Split(value, ";") {
		if part = strings.TrimSpace(part); part != "" {
			addrs = append(addrs, part)
		}
	}
	return addrs
}

func splitProperty(text string) (string, string, error) {
	key, value, ok := strings.Cut(text, "=")
	if !ok || key == "" {
		return "", "", fmt.Errorf("--property wants KEY=VALUE, got %q", text)
	}
	return key, value, nil
}
