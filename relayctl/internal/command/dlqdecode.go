package command

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// undecodedNote labels a body shown as raw bytes.
const undecodedNote = "no descriptor set given"

// bodyDecoder turns a dead-letter body into protojson for dlq show: with
// --descriptor-set and --message-type any protobuf message, else the
// service's hook.Decoder; nil shows bodies undecoded.
type bodyDecoder struct {
	decode   func(body []byte, attrs map[string]string) (proto.Message, error)
	resolver interface {
		protoregistry.ExtensionTypeResolver
		protoregistry.MessageTypeResolver
	}
}

// newBodyDecoder builds the decoder of one dlq show invocation. A
// descriptor set that cannot be read is bad input (exit 2); a message type
// it lacks is reported for every message (the listing goes on).
func newBodyDecoder(c *cli, file, typ string) (*bodyDecoder, error) {
	switch {
	case file == "" && typ == "":
		if c.hooks.Decoder == nil {
			return nil, nil
		}
		return &bodyDecoder{decode: c.hooks.Decoder.Decode, resolver: protoregistry.GlobalTypes}, nil
	case file == "":
		return nil, usageErr("dlq show: --message-type needs --descriptor-set (a FileDescriptorSet: buf build -o FILE.binpb)")
	case typ == "":
		return nil, usageErr("dlq show: --descriptor-set needs --message-type (the envelope's full name, e.g. orders.v1.Event)")
	}
	files, err := loadDescriptorSet(file)
	if err != nil {
		return nil, usageErr("dlq show: --descriptor-set %s: %v", file, err)
	}
	types := dynamicpb.NewTypes(files)
	d := &bodyDecoder{resolver: types}
	mt, err := types.FindMessageByName(protoreflect.FullName(typ))
	if err != nil {
		notFound := fmt.Errorf("--message-type %s is not a message of descriptor set %s (it has %s)", typ, file, messageNames(files, 8))
		fmt.Fprintf(c.stderr, "WARNING: %v\n", notFound)
		d.decode = func([]byte, map[string]string) (proto.Message, error) { return nil, notFound }
		return d, nil
	}
	d.decode = func(body []byte, _ map[string]string) (proto.Message, error) {
		m := mt.New().Interface()
		if err := (proto.UnmarshalOptions{Resolver: types}).Unmarshal(body, m); err != nil {
			return nil, fmt.Errorf("not a %s: %w", typ, err)
		}
		return m, nil
	}
	return d, nil
}

// loadDescriptorSet reads a FileDescriptorSet (buf build -o FILE.binpb,
// protoc --descriptor_set_out --include_imports).
func loadDescriptorSet(file string) (*protoregistry.Files, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a FileDescriptorSet (make one with buf build -o FILE.binpb): %w", err)
	}
	if len(set.GetFile()) == 0 {
		return nil, errors.New("the FileDescriptorSet holds no file")
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, fmt.Errorf("%w (build it with its imports: buf build -o FILE.binpb, without --exclude-imports)", err)
	}
	return files, nil
}

// messageNames lists up to n top-level message names of files, sorted.
func messageNames(files *protoregistry.Files, n int) string {
	var names []string
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Messages().Len(); i++ {
			names = append(names, string(fd.Messages().Get(i).FullName()))
		}
		return true
	})
	sort.Strings(names)
	if len(names) == 0 {
		return "no message"
	}
	if len(names) > n {
		return strings.Join(names[:n], ", ") + fmt.Sprintf(", ... %d more", len(names)-n)
	}
	return strings.Join(names, ", ")
}

// json decodes body and renders it as protojson (compact).
func (d *bodyDecoder) json(body []byte, attrs map[string]string) ([]byte, error) {
	m, err := d.decode(body, attrs)
	if err != nil {
		return nil, err
	}
	b, err := protojson.MarshalOptions{Resolver: d.resolver}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("rendering as JSON: %w", err)
	}
	return b, nil
}
