package strict

import (
	"fmt"
	"unicode/utf8"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/contract"
)

// Cloud Pub/Sub's documented limits (see the package documentation); a
// message's are the message contract's (package contract), which the writer checks too.
const (
	MaxRequestMessages  = 1000
	MaxRequestBytes     = 10_000_000
	MaxAttributes       = contract.MaxAttributes
	MaxAttributeKey     = contract.MaxAttributeKeyBytes
	MaxAttributeValue   = contract.MaxAttributeValueBytes
	MaxOrderingKeyBytes = contract.MaxOrderingKeyBytes
)

// Rule names a refusal in Stats.
type Rule string

// The rules of CheckPublish.
const (
	RuleMixedOrderingKeys Rule = "mixed_ordering_keys"
	RuleTooManyMessages   Rule = "too_many_messages"
	RuleRequestTooLarge   Rule = "request_too_large"
	RuleNoMessages        Rule = "no_messages"
	RuleEmptyMessage      Rule = "empty_message"
	RuleTooManyAttributes Rule = "too_many_attributes"
	RuleAttributeKey      Rule = "attribute_key_too_long"
	RuleAttributeValue    Rule = "attribute_value_too_long"
	RuleOrderingKeyLength Rule = "ordering_key_too_long"
	RuleServerFields      Rule = "server_fields_set"
	RuleReservedKey       Rule = "reserved_attribute_key"
	RuleInvalidUTF8       Rule = "invalid_utf8"
)

// MixedOrderingKeysMessage is what Cloud Pub/Sub answers, with
// FAILED_PRECONDITION, to a Publish request whose messages carry different
// ordering keys.
const MixedOrderingKeysMessage = "In a single publish request, all messages must have no ordering key or they must all have the same ordering key."

// Refusal is a Publish request the double refused.
type Refusal struct {
	Rule Rule
	Err  error // the status error answered
}

// CheckPublish applies Cloud Pub/Sub's rules to req. It returns nil or the
// refusal, whose Err is the status error the service answers.
func CheckPublish(req *pb.PublishRequest) *Refusal {
	msgs := req.GetMessages()
	if len(msgs) == 0 {
		return refuse(RuleNoMessages, codes.InvalidArgument, "The request must contain at least one message.")
	}
	if len(msgs) > MaxRequestMessages {
		return refuse(RuleTooManyMessages, codes.InvalidArgument,
			fmt.Sprintf("The value for %d is too large. You passed message_count in the request, but the maximum value is %d.", len(msgs), MaxRequestMessages))
	}
	if n := proto.Size(req); n > MaxRequestBytes {
		return refuse(RuleRequestTooLarge, codes.InvalidArgument,
			fmt.Sprintf("The value for %d is too large. You passed request_size in the request, but the maximum value is %d.", n, MaxRequestBytes))
	}
	key := msgs[0].GetOrderingKey()
	for i, m := range msgs {
		if m.GetOrderingKey() != key {
			return refuse(RuleMixedOrderingKeys, codes.FailedPrecondition, MixedOrderingKeysMessage)
		}
		if r := checkMessage(i, m); r != nil {
			return r
		}
	}
	return nil
}

func checkMessage(i int, m *pb.PubsubMessage) *Refusal {
	if len(m.GetData()) == 0 && len(m.GetAttributes()) == 0 {
		return refuse(RuleEmptyMessage, codes.InvalidArgument,
			fmt.Sprintf("Message %d is empty: a message must contain either a non-empty data field or at least one attribute.", i))
	}
	if n := len(m.GetAttributes()); n > MaxAttributes {
		return refuse(RuleTooManyAttributes, codes.InvalidArgument,
			fmt.Sprintf("The value for %d is too large. You passed attribute_count in the request, but the maximum value is %d.", n, MaxAttributes))
	}
	for k, v := range m.GetAttributes() {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return refuse(RuleInvalidUTF8, codes.InvalidArgument,
				fmt.Sprintf("Message %d has an attribute that is not valid UTF-8.", i))
		}
		if contract.ReservedKey(k) {
			return refuse(RuleReservedKey, codes.InvalidArgument,
				fmt.Sprintf("Message %d has an attribute key starting with the reserved prefix %q: %q.", i, contract.ReservedPrefix, k))
		}
		if len(k) > MaxAttributeKey {
			return refuse(RuleAttributeKey, codes.InvalidArgument,
				fmt.Sprintf("The value for %d is too large. You passed attribute_key_size in the request, but the maximum value is %d.", len(k), MaxAttributeKey))
		}
		if len(v) > MaxAttributeValue {
			return refuse(RuleAttributeValue, codes.InvalidArgument,
				fmt.Sprintf("The value for %d is too large. You passed attribute_value_size in the request, but the maximum value is %d.", len(v), MaxAttributeValue))
		}
	}
	if !utf8.ValidString(m.GetOrderingKey()) {
		return refuse(RuleInvalidUTF8, codes.InvalidArgument,
			fmt.Sprintf("Message %d has an ordering key that is not valid UTF-8.", i))
	}
	if n := len(m.GetOrderingKey()); n > MaxOrderingKeyBytes {
		return refuse(RuleOrderingKeyLength, codes.InvalidArgument,
			fmt.Sprintf("The value for %d is too large. You passed ordering_key_size in the request, but the maximum value is %d.", n, MaxOrderingKeyBytes))
	}
	if m.GetMessageId() != "" || m.GetPublishTime() != nil {
		return refuse(RuleServerFields, codes.InvalidArgument,
			fmt.Sprintf("Message %d sets message_id or publish_time: they must not be populated by the publisher.", i))
	}
	return nil
}

func refuse(rule Rule, code codes.Code, msg string) *Refusal {
	return &Refusal{Rule: rule, Err: status.Error(code, msg)}
}
