package server

import (
	"context"
	"fmt"
	"mime"
	"net/http"

	"github.com/go-kratos/kratos/v2/errors"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
)

// RegisterVideoServiceHTTPServer registers the HTTP routes of
// catalog.v1.VideoService, exactly as the google.api.http annotations of
// api/catalog/v1/video.proto declare them and as protoc-gen-go-http would
// generate them: JSON bodies and responses through Kratos' protojson codec,
// path variables and query parameters by proto field name, the gRPC method
// name as the operation (so middleware selectors match both transports),
// 200 on success and Kratos error bodies ({code, reason, message,
// metadata}) otherwise. One addition: DELETE, which the annotations give
// no body, also takes its fields (reason, expected_version) from a JSON
// body, validated as the query's are, since clients send them there.
func RegisterVideoServiceHTTPServer(s *khttp.Server, srv catalogv1.VideoServiceServer) {
	r := s.Route("/")
	r.POST("/v1/videos", route(catalogv1.VideoService_CreateVideo_FullMethodName, bindBody, srv.CreateVideo))
	r.PATCH("/v1/videos/{id}", route(catalogv1.VideoService_UpdateVideo_FullMethodName, bindBodyAndVars, srv.UpdateVideo))
	r.DELETE("/v1/videos/{id}", route(catalogv1.VideoService_DeleteVideo_FullMethodName, bindBodyQueryAndVars, srv.DeleteVideo))
	r.GET("/v1/videos/{id}", route(catalogv1.VideoService_GetVideo_FullMethodName, bindQueryAndVars, srv.GetVideo))
	r.GET("/v1/videos", route(catalogv1.VideoService_ListVideos_FullMethodName, bindQuery, srv.ListVideos))
	r.GET("/v1/videos:search", route(catalogv1.VideoService_SearchVideos_FullMethodName, bindQuery, srv.SearchVideos))
}

// route is the handler protoc-gen-go-http generates for one method: bind
// the request, then call the method through the server's middleware.
func route[Req any, Resp any](operation string, bind func(khttp.Context, any) error, call func(context.Context, *Req) (Resp, error)) khttp.HandlerFunc {
	return func(ctx khttp.Context) error {
		in := new(Req)
		if err := bind(ctx, in); err != nil {
			se := errors.FromError(err)
			if se.GetMetadata()["field"] != "" {
				return err // already names its field (DecodeJSONBody)
			}
			code := int(se.GetCode())
			if code != http.StatusUnsupportedMediaType {
				code = http.StatusBadRequest
			}
			return errors.New(code, catalogv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT.String(), "request: "+se.GetMessage()).
				WithMetadata(map[string]string{"field": "request"}).WithCause(err)
		}
		khttp.SetOperation(ctx, operation)
		h := ctx.Middleware(func(ctx context.Context, req any) (any, error) {
			return call(ctx, req.(*Req))
		})
		out, err := h(ctx, in)
		if err != nil {
			return err
		}
		return ctx.Result(http.StatusOK, out)
	}
}

// bindBody decodes a JSON body strictly (DecodeJSONBody). Other content
// types are refused: Kratos would decode e.g. curl's default
// application/x-www-form-urlencoded as a form, silently turning a JSON body
// into an empty request.
func bindBody(ctx khttp.Context, in any) error {
	if ct := ctx.Request().Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return errors.New(http.StatusUnsupportedMediaType, catalogv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT.String(),
				fmt.Sprintf("Content-Type %q is not supported, send application/json", ct))
		}
	}
	m, ok := in.(proto.Message)
	if !ok {
		return fmt.Errorf("binding %T: not a proto message", in)
	}
	return DecodeJSONBody(ctx.Request().Body, m)
}

func bindQuery(ctx khttp.Context, in any) error { return ctx.BindQuery(in) }

func bindBodyAndVars(ctx khttp.Context, in any) error {
	if err := bindBody(ctx, in); err != nil {
		return err
	}
	return ctx.BindVars(in)
}

func bindQueryAndVars(ctx khttp.Context, in any) error {
	if err := ctx.BindQuery(in); err != nil {
		return err
	}
	return ctx.BindVars(in)
}

// bindBodyQueryAndVars binds a request whose fields may come from a JSON
// body (strictly, as bindBody) and from the query: both reach the
// method's validation, and a field given in both places is refused rather
// than one silently replacing the other. Path variables come last.
func bindBodyQueryAndVars(ctx khttp.Context, in any) error {
	if err := bindBody(ctx, in); err != nil {
		return err
	}
	body := in.(proto.Message).ProtoReflect() // bindBody refused anything else
	query := body.New()
	if err := ctx.BindQuery(query.Interface()); err != nil {
		return err
	}
	var twice error
	query.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if body.Has(fd) {
			twice = badField(string(fd.Name()), "given in both the query and the body: give it once")
			return false
		}
		body.Set(fd, v)
		return true
	})
	if twice != nil {
		return twice
	}
	return ctx.BindVars(in)
}
