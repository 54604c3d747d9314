package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// messageSpec is one message to send, from the JSON spec or the command line (as in peer.py).
type messageSpec struct {
	Topic       string
	Body        []byte
	Tags        *string
	Keys        *string
	Properties  map[string]string
	DelayLevel  *int
	ShardingKey *int
}

var specFields = map[string]bool{
	"topic": true, "body": true, "body_b64": true, "tags": true, "keys": true, "properties": true,
	"delay_level": true, "sharding_key": true,
}

// text renders a JSON value as Python's str() would for the simple cases a spec holds.
func text(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err == nil {
		return n.String(), nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		if b {
			return "True", nil
		}
		return "False", nil
	}
	return "", fmt.Errorf("not a string or number: %s", raw)
}

func integer(raw json.RawMessage) (int, error) {
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err != nil {
		s, serr := text(raw)
		if serr != nil {
			return 0, fmt.Errorf("not an integer: %s", raw)
		}
		n = json.Number(s)
	}
	value, err := strconv.Atoi(n.String())
	if err != nil {
		return 0, fmt.Errorf("not an integer: %s", raw)
	}
	return value, nil
}

func isNull(raw json.RawMessage) bool { return strings.TrimSpace(string(raw)) == "null" }

// specFromMapping returns the spec and whether its body is text (only text bodies get {i} substituted).
func specFromMapping(raw map[string]json.RawMessage, defaultTopic string, where string) (*messageSpec, bool, error) {
	var unknown []string
	for key := range raw {
		if !specFields[key] {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, false, usagef("%s: unknown fields %q", where, unknown)
	}
	spec := &messageSpec{Topic: defaultTopic, Properties: map[string]string{}}
	if value, ok := raw["topic"]; ok && !isNull(value) {
		if err := json.Unmarshal(value, &spec.Topic); err != nil {
			return nil, false, usagef("%s: topic must be a string", where)
		}
	}
	if spec.Topic == "" {
		return nil, false, usagef("%s: no topic (give --topic or a 'topic' field)", where)
	}
	_, isB64 := raw["body_b64"]
	if isB64 {
		var encoded string
		if err := json.Unmarshal(raw["body_b64"], &encoded); err != nil {
			return nil, false, usagef("%s: body_b64 must be a string", where)
		}
		body, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			return nil, false, usagef("%s: body_b64 is not base64: %v", where, err)
		}
		spec.Body = body
	} else if value, ok := raw["body"]; ok && !isNull(value) {
		body, err := text(value)
		if err != nil {
			return nil, false, usagef("%s: body: %v", where, err)
		}
		spec.Body = []byte(body)
	} else {
		spec.Body = []byte{}
	}
	if value, ok := raw["tags"]; ok && !isNull(value) {
		tags, err := text(value)
		if err != nil {
			return nil, false, usagef("%s: tags: %v", where, err)
		}
		spec.Tags = &tags
	}
	if value, ok := raw["keys"]; ok && !isNull(value) {
		var list []json.RawMessage
		var keys string
		if err := json.Unmarshal(value, &list); err == nil {
			parts := make([]string, 0, len(list))
			for _, item := range list {
				part, err := text(item)
				if err != nil {
					return nil, false, usagef("%s: keys: %v", where, err)
				}
				parts = append(parts, part)
			}
			keys = strings.Join(parts, primitive.PropertyKeySeparator) // Java's MessageConst.KEY_SEPARATOR
		} else if keys, err = text(value); err != nil {
			return nil, false, usagef("%s: keys: %v", where, err)
		}
		spec.Keys = &keys
	}
	if value, ok := raw["properties"]; ok && !isNull(value) {
		var props map[string]json.RawMessage
		if err := json.Unmarshal(value, &props); err != nil {
			return nil, false, usagef("%s: properties must be an object", where)
		}
		for key, item := range props {
			prop, err := text(item)
			if err != nil {
				return nil, false, usagef("%s: property %s: %v", where, key, err)
			}
			spec.Properties[key] = prop
		}
	}
	if value, ok := raw["delay_level"]; ok && !isNull(value) {
		level, err := integer(value)
		if err != nil {
			return nil, false, usagef("%s: delay_level: %v", where, err)
		}
		spec.DelayLevel = &level
	}
	if value, ok := raw["sharding_key"]; ok && !isNull(value) {
		key, err := integer(value)
		if err != nil {
			return nil, false, usagef("%s: sharding_key: %v", where, err)
		}
		spec.ShardingKey = &key
	}
	return spec, !isB64, nil
}

// parseSpecs builds the messages to send: a JSON spec (object or list) from --spec or stdin, else the
// flags. Each spec is sent --count times; in text bodies "{i}" becomes the running index.
func parseSpecs(o *options, stdin io.Reader) ([]*messageSpec, error) {
	var raws []map[string]json.RawMessage
	if o.specGiven {
		data := []byte(o.spec)
		if o.spec == "-" {
			read, err := io.ReadAll(stdin)
			if err != nil {
				return nil, usagef("reading the message spec from stdin: %v", err)
			}
			data = read
		}
		trimmed := bytes.TrimSpace(data)
		if len(trimmed) > 0 && trimmed[0] == '[' {
			if err := json.Unmarshal(trimmed, &raws); err != nil {
				return nil, usagef("message spec must be an object or a non-empty list of objects: %v", err)
			}
		} else {
			var one map[string]json.RawMessage
			if err := json.Unmarshal(trimmed, &one); err != nil {
				return nil, usagef("message spec is not a JSON object or list: %v", err)
			}
			raws = append(raws, one)
		}
		if len(raws) == 0 {
			return nil, usagef("message spec must be an object or a non-empty list of objects")
		}
		for _, raw := range raws {
			if raw == nil {
				return nil, usagef("message spec must be an object or a non-empty list of objects")
			}
		}
	} else {
		raw := map[string]json.RawMessage{"body": mustJSON(o.body)}
		if o.tagsGiven {
			raw["tags"] = mustJSON(o.tags)
		}
		if o.keysGiven {
			raw["keys"] = mustJSON(o.keys)
		}
		if len(o.properties) > 0 {
			props := map[string]string{}
			for _, item := range o.properties {
				key, value, err := splitProperty(item)
				if err != nil {
					return nil, usagef("%v", err)
				}
				props[key] = value
			}
			raw["properties"] = mustJSON(props)
		}
		if o.delayLevel != 0 {
			raw["delay_level"] = mustJSON(o.delayLevel)
		}
		raws = append(raws, raw)
	}
	type parsedSpec struct {
		spec   *messageSpec
		isText bool
	}
	parsed := make([]parsedSpec, 0, len(raws))
	for n, raw := range raws {
		spec, isText, err := specFromMapping(raw, o.topic, fmt.Sprintf("message %d", n))
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, parsedSpec{spec, isText})
	}
	var specs []*messageSpec
	index := 0
	for round := 0; round < o.count; round++ {
		for _, p := range parsed {
			copied := *p.spec
			copied.Properties = make(map[string]string, len(p.spec.Properties))
			for k, v := range p.spec.Properties {
				copied.Properties[k] = v
			}
			if p.isText {
				copied.Body = bytes.ReplaceAll(p.spec.Body, []byte("{i}"), []byte(strconv.Itoa(index)))
			}
			specs = append(specs, &copied)
			index++
		}
	}
	return specs, nil
}

func mustJSON(value any) json.RawMessage {
	data, err := json.Marshal(value)
	if err != nil {
		panic(err)
	}
	return data
}

// buildMessage is the Go client's message for spec. Note that the Go client's WithProperty drops a
// property whose name or value is empty (and so do WithTag and WithKeys).
func buildMessage(spec *messageSpec) *primitive.Message {
	msg := primitive.NewMessage(spec.Topic, spec.Body)
	if spec.Tags != nil {
		msg.WithTag(*spec.Tags)
	}
	if spec.Keys != nil {
		msg.WithProperty(primitive.PropertyKeys, *spec.Keys)
	}
	keys := make([]string, 0, len(spec.Properties))
	for key := range spec.Properties {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		msg.WithProperty(key, spec.Properties[key])
	}
	if spec.DelayLevel != nil {
		msg.WithDelayTimeLevel(*spec.DelayLevel)
	}
	return msg
}
