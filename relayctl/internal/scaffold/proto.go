package scaffold

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/cmd/protoc-gen-go/internal_gengo"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/pluginpb"
)

// field is one field of a contract message.
type field struct {
	name, typeName string // typeName: a scalar ("string") or a message's full name
	number         int32
	comment        string
}

// message is one message of the contract, with its leading comment.
type message struct {
	name, comment string
	fields        []field
}

const timestampProto = "google/protobuf/timestamp.proto"

var scalars = map[string]descriptorpb.FieldDescriptorProto_Type{
	"string": descriptorpb.FieldDescriptorProto_TYPE_STRING,
	"int64":  descriptorpb.FieldDescriptorProto_TYPE_INT64,
}

// contract is the service's event contract: the aggregate's state and one
// state-carrying message per event.
func contract(n names) []message {
	ms := []message{{
		name: n.Aggregate,
		comment: fmt.Sprintf(" %s is the state of one %s at a version; every event carries it whole,\n"+
			" so a read model applies an event only if it is newer than what it holds.\n", n.Aggregate, n.AggSnake),
		fields: []field{
			{"id", "string", 1, " id is the aggregate id (a UUID).\n"},
			{"version", "int64", 2, " version counts the events of the aggregate, from 1.\n"},
			{"state", "string", 3, " state is the snake_case name of the last event.\n"},
			{"updated_at", "google.protobuf.Timestamp", 4, " updated_at is when the last event happened.\n"},
		},
	}}
	for _, e := range n.Events {
		ms = append(ms, message{
			name:    e.Message,
			comment: fmt.Sprintf(" %s carries the %s after the event (type %q).\n", e.Message, n.AggSnake, e.Type),
			fields:  []field{{n.AggSnake, n.ProtoPackage + "." + n.Aggregate, 1, ""}},
		})
	}
	return ms
}

// eventsFile is the contract as the descriptor protoc hands its plugins
// (JSON names and comments included).
func eventsFile(n names) *descriptorpb.FileDescriptorProto {
	f := &descriptorpb.FileDescriptorProto{
		Name:           proto.String(n.ProtoFile),
		Package:        proto.String(n.ProtoPackage),
		Dependency:     []string{timestampProto},
		Options:        &descriptorpb.FileOptions{GoPackage: proto.String(n.APIImport + ";" + n.APIPackage)},
		Syntax:         proto.String("proto3"),
		SourceCodeInfo: &descriptorpb.SourceCodeInfo{},
	}
	const messageType, fieldNumber = 4, 2 // FileDescriptorProto.message_type, DescriptorProto.field
	for i, m := range contract(n) {
		d := &descriptorpb.DescriptorProto{Name: proto.String(m.name)}
		comment(f, m.comment, messageType, int32(i))
		for j, fl := range m.fields {
			fd := &descriptorpb.FieldDescriptorProto{
				Name:     proto.String(fl.name),
				Number:   proto.Int32(fl.number),
				Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
				JsonName: proto.String(lowerCamel(fl.name)),
			}
			if t, ok := scalars[fl.typeName]; ok {
				fd.Type = t.Enum()
			} else {
				fd.Type = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
				fd.TypeName = proto.String("." + fl.typeName)
			}
			d.Field = append(d.Field, fd)
			comment(f, fl.comment, messageType, int32(i), fieldNumber, int32(j))
		}
		f.MessageType = append(f.MessageType, d)
	}
	return f
}

// comment records a leading comment at path (none when text is empty).
func comment(f *descriptorpb.FileDescriptorProto, text string, path ...int32) {
	if text == "" {
		return
	}
	f.SourceCodeInfo.Location = append(f.SourceCodeInfo.Location, &descriptorpb.SourceCodeInfo_Location{
		Path: path, Span: []int32{0, 0, 0}, LeadingComments: proto.String(text),
	})
}

// protoText prints the contract as the .proto file it is.
func protoText(n names) string {
	var b strings.Builder
	fmt.Fprintf(&b, "syntax = \"proto3\";\n\npackage %s;\n\nimport %q;\n\noption go_package = %q;\n",
		n.ProtoPackage, timestampProto, n.APIImport+";"+n.APIPackage)
	for _, m := range contract(n) {
		fmt.Fprintf(&b, "\n%smessage %s {\n", commentText(m.comment, ""), m.name)
		for _, fl := range m.fields {
			typ := strings.TrimPrefix(fl.typeName, n.ProtoPackage+".")
			fmt.Fprintf(&b, "%s  %s %s = %d;\n", commentText(fl.comment, "  "), typ, fl.name, fl.number)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

func commentText(text, indent string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(text, "\n") {
		if l != "" {
			b.WriteString(indent + "//" + l)
		}
	}
	return b.String()
}

// generateGo runs protoc-gen-go's generator on the contract, as protoc
// would with paths=source_relative, and returns the Go file's path
// (relative to api/) and content.
func generateGo(n names) (string, []byte, error) {
	f := eventsFile(n)
	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: []string{f.GetName()},
		Parameter:      proto.String("paths=source_relative"),
		ProtoFile:      []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(timestamppb.File_google_protobuf_timestamp_proto), f},
	}
	gen, err := protogen.Options{}.New(req)
	if err != nil {
		return "", nil, fmt.Errorf("generating %s: %w", f.GetName(), err)
	}
	for _, file := range gen.Files {
		if file.Generate {
			internal_gengo.GenerateFile(gen, file)
		}
	}
	resp := gen.Response()
	if resp.Error != nil {
		return "", nil, fmt.Errorf("generating %s: %s", f.GetName(), resp.GetError())
	}
	if len(resp.File) != 1 {
		return "", nil, fmt.Errorf("generating %s: %d files, want 1", f.GetName(), len(resp.File))
	}
	return resp.File[0].GetName(), []byte(resp.File[0].GetContent()), nil
}
