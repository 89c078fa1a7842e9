package service

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
)

// VideoService implements catalogv1.VideoServiceServer.
type VideoService struct {
	catalogv1.UnimplementedVideoServiceServer

	uc    *biz.VideoUsecase
	reads *biz.ReadUsecase
}

var _ catalogv1.VideoServiceServer = (*VideoService)(nil)

// NewVideoService returns the API: writes through uc, reads through
// reads.
func NewVideoService(uc *biz.VideoUsecase, reads *biz.ReadUsecase) *VideoService {
	return &VideoService{uc: uc, reads: reads}
}

// CreateVideo creates a video at version 1.
func (s *VideoService) CreateVideo(ctx context.Context, req *catalogv1.CreateVideoRequest) (*catalogv1.CreateVideoResponse, error) {
	ch, err := s.uc.Create(ctx, biz.Draft{
		UploaderID:     req.GetUploaderId(),
		Title:          req.GetTitle(),
		Description:    req.GetDescription(),
		DurationMicros: req.GetDurationMicros(),
		Status:         req.GetStatus(),
	})
	if err != nil {
		return nil, err
	}
	return &catalogv1.CreateVideoResponse{Video: ch.Video, Event: eventRef(ch.Event), ConsistencyToken: answerToken(ctx, ch.Video)}, nil
}

// UpdateVideo applies the set fields.
func (s *VideoService) UpdateVideo(ctx context.Context, req *catalogv1.UpdateVideoRequest) (*catalogv1.UpdateVideoResponse, error) {
	ch, err := s.uc.Update(ctx, req.GetId(), biz.Patch{
		Title:           req.Title,
		Description:     req.Description,
		DurationMicros:  req.DurationMicros,
		Status:          req.Status,
		MediaStatus:     req.MediaStatus,
		AnalysisStatus:  req.AnalysisStatus,
		ExpectedVersion: req.ExpectedVersion,
	})
	if err != nil {
		return nil, err
	}
	return &catalogv1.UpdateVideoResponse{Video: ch.Video, Event: eventRef(ch.Event), ConsistencyToken: answerToken(ctx, ch.Video)}, nil
}

// DeleteVideo tombstones the video.
func (s *VideoService) DeleteVideo(ctx context.Context, req *catalogv1.DeleteVideoRequest) (*catalogv1.DeleteVideoResponse, error) {
	ch, err := s.uc.Delete(ctx, req.GetId(), req.ExpectedVersion, req.GetReason())
	if err != nil {
		return nil, err
	}
	return &catalogv1.DeleteVideoResponse{Video: ch.Video, Event: eventRef(ch.Event), ConsistencyToken: answerToken(ctx, ch.Video)}, nil
}

// GetVideo reads one live video from the Postgres read model.
func (s *VideoService) GetVideo(ctx context.Context, req *catalogv1.GetVideoRequest) (*catalogv1.GetVideoResponse, error) {
	c, err := readConsistency(ctx, req.GetConsistencyTokens())
	if err != nil {
		return nil, err
	}
	v, err := s.reads.Get(ctx, req.GetId(), req.MinVersion, c)
	if err != nil {
		return nil, err
	}
	return &catalogv1.GetVideoResponse{Video: v}, nil
}

// ListVideos pages through the live videos of the Postgres read model
// ordered by id.
func (s *VideoService) ListVideos(ctx context.Context, req *catalogv1.ListVideosRequest) (*catalogv1.ListVideosResponse, error) {
	c, err := readConsistency(ctx, req.GetConsistencyTokens())
	if err != nil {
		return nil, err
	}
	videos, next, err := s.reads.List(ctx, req.GetPageSize(), req.GetPageToken(), c)
	if err != nil {
		return nil, err
	}
	return &catalogv1.ListVideosResponse{Videos: videos, NextPageToken: next}, nil
}

// SearchVideos searches the search index.
func (s *VideoService) SearchVideos(ctx context.Context, req *catalogv1.SearchVideosRequest) (*catalogv1.SearchVideosResponse, error) {
	c, err := readConsistency(ctx, req.GetConsistencyTokens())
	if err != nil {
		return nil, err
	}
	videos, next, disabled, err := s.reads.Search(ctx, biz.SearchQuery{
		Text: req.GetQuery(), Status: req.GetStatus(), UploaderID: req.GetUploaderId(), Order: req.GetOrder(),
		Limit: int(req.GetPageSize()), PageToken: req.GetPageToken(),
	}, c)
	if err != nil {
		return nil, err
	}
	return &catalogv1.SearchVideosResponse{Videos: videos, NextPageToken: next, SearchDisabled: disabled}, nil
}

func eventRef(e biz.EventRef) *catalogv1.EventRef {
	return &catalogv1.EventRef{
		EventId:    e.ID.String(),
		Version:    e.Version,
		OccurredAt: timestamppb.New(e.OccurredAt),
	}
}
