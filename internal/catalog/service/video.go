package service

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	catalogv1 "github.com/eventrelay/eventrelay/api/catalog/v1"
	"github.com/eventrelay/eventrelay/internal/catalog/biz"
)

// VideoService implements catalogv1.VideoServiceServer.
type VideoService struct {
	catalogv1.UnimplementedVideoServiceServer

	uc *biz.VideoUsecase
}

var _ catalogv1.VideoServiceServer = (*VideoService)(nil)

// NewVideoService returns the API over uc.
func NewVideoService(uc *biz.VideoUsecase) *VideoService {
	return &VideoService{uc: uc}
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
	return &catalogv1.CreateVideoResponse{Video: ch.Video, Event: eventRef(ch.Event)}, nil
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
	return &catalogv1.UpdateVideoResponse{Video: ch.Video, Event: eventRef(ch.Event)}, nil
}

// DeleteVideo tombstones the video.
func (s *VideoService) DeleteVideo(ctx context.Context, req *catalogv1.DeleteVideoRequest) (*catalogv1.DeleteVideoResponse, error) {
	ch, err := s.uc.Delete(ctx, req.GetId(), req.ExpectedVersion, req.GetReason())
	if err != nil {
		return nil, err
	}
	return &catalogv1.DeleteVideoResponse{Video: ch.Video, Event: eventRef(ch.Event)}, nil
}

// GetVideo reads one live video.
func (s *VideoService) GetVideo(ctx context.Context, req *catalogv1.GetVideoRequest) (*catalogv1.GetVideoResponse, error) {
	v, err := s.uc.Get(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return &catalogv1.GetVideoResponse{Video: v}, nil
}

// ListVideos pages through live videos ordered by id.
func (s *VideoService) ListVideos(ctx context.Context, req *catalogv1.ListVideosRequest) (*catalogv1.ListVideosResponse, error) {
	videos, next, err := s.uc.List(ctx, req.GetPageSize(), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	return &catalogv1.ListVideosResponse{Videos: videos, NextPageToken: next}, nil
}

func eventRef(e biz.EventRef) *catalogv1.EventRef {
	return &catalogv1.EventRef{
		EventId:    e.ID.String(),
		Version:    e.Version,
		OccurredAt: timestamppb.New(e.OccurredAt),
	}
}
