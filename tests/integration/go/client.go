package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// remoteCodecType is the Go client's header serialization for every request it sends: an unexported
// package variable of its internal/remote package (0: JSON, the only value the client itself ever uses;
// 1: ROCKETMQ, which that package can encode and decode but offers no option for). Decoding follows the
// type byte of each received frame either way.
//
//go:linkname remoteCodecType github.com/apache/rocketmq-client-go/v2/internal/remote.codecType
var remoteCodecType byte

const (
	codecJSON     = byte(0)
	codecRocketMQ = byte(1)
)

// stderrLogger sends the Go client's logs to stderr (never stdout) and, unlike its default logger, never
// exits the process on a Fatal.
type stderrLogger struct {
	mu    sync.Mutex
	level int
}

var logLevels = map[string]int{"debug": 0, "info": 1, "warn": 2, "warning": 2, "error": 3, "fatal": 4}

func (l *stderrLogger) log(level int, name string, msg string, fields map[string]interface{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if level < l.level {
		return
	}
	keys := make([]string, 0, len(fields))
	for key := range fields {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", time.Now().Format("15:04:05.000"), name, msg)
	for _, key := range keys {
		fmt.Fprintf(&b, " %s=%v", key, fields[key])
	}
	b.WriteByte('\n')
	os.Stderr.WriteString(b.String()) //nolint:errcheck
}

func (l *stderrLogger) Debug(msg string, fields map[string]interface{}) {
	l.log(0, "DEBUG", msg, fields)
}
func (l *stderrLogger) Info(msg string, fields map[string]interface{}) { l.log(1, "INFO", msg, fields) }
func (l *stderrLogger) Warning(msg string, fields map[string]interface{}) {
	l.log(2, "WARN", msg, fields)
}
func (l *stderrLogger) Error(msg string, fields map[string]interface{}) {
	l.log(3, "ERROR", msg, fields)
}
func (l *stderrLogger) Fatal(msg string, fields map[string]interface{}) {
	l.log(4, "FATAL", msg, fields)
}
func (l *stderrLogger) Level(level string) {
	if value, ok := logLevels[strings.ToLower(level)]; ok {
		l.mu.Lock()
		l.level = value
		l.mu.Unlock()
	}
}
func (l *stderrLogger) OutputPath(path string) error { return nil }

// configureClient sets what must be set before any client exists: logging and the header codec.
func configureClient(o *options) error {
	logger := &stderrLogger{level: logLevels["warn"]}
	if level := os.Getenv("GO_PEER_LOG_LEVEL"); level != "" {
		logger.Level(level)
	}
	rlog.SetLogger(logger)
	switch o.serialize {
	case "ROCKETMQ":
		remoteCodecType = codecRocketMQ
	default:
		remoteCodecType = codecJSON
	}
	return nil
}

func credentials(o *options) (primitive.Credentials, bool) {
	if o.accessKey == "" {
		return primitive.Credentials{}, false
	}
	return primitive.Credentials{AccessKey: o.accessKey, SecretKey: o.secretKey}, true
}

// runEnv is what every command gets.
type runEnv struct {
	opts    *options
	state   *progress
	dog     *watchdog
	started time.Time
}

func (e *runEnv) elapsedMs() int64 { return time.Since(e.started).Milliseconds() }

// shutdownWithin shuts a client down on a helper goroutine, giving up after the --shutdown-timeout.
func (e *runEnv) shutdownWithin(shutdown func() error) string {
	e.state.setStage("shutdown")
	e.dog.extend(e.opts.shutdownTimeout + 2.0)
	result := make(chan string, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				result <- fmt.Sprintf("error: panic: %v", r)
			}
		}()
		if err := shutdown(); err != nil {
			result <- "error: " + err.Error()
			return
		}
		result <- "ok"
	}()
	select {
	case outcome := <-result:
		return outcome
	case <-time.After(time.Duration(e.opts.shutdownTimeout * float64(time.Second))):
		return "timeout"
	}
}

// finish shuts the client down and prints the done line; returns code.
func (e *runEnv) finish(shutdown func() error, code int) int {
	outcome := "ok"
	if shutdown != nil {
		outcome = e.shutdownWithin(shutdown)
	}
	out.emit("done", F("command", e.opts.command), F("count", e.state.total()), F("elapsed_ms", e.elapsedMs()),
		F("shutdown", outcome))
	return code
}

// clientError prints an "error" line for an error the Go client returned.
func clientError(errorType string, err error, extra ...field) {
	fields := []field{F("error_type", errorType), F("message", err.Error()), F("go_error_type", fmt.Sprintf("%T", err))}
	out.emit("error", append(fields, extra...)...)
}
