package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3Config locates a bucket. Credentials and region come from the standard
// AWS chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
// AWS_REGION, AWS_PROFILE, instance roles) unless set here.
type S3Config struct {
	Bucket string
	// Prefix is prepended (with a "/") to every key, so several deployments
	// can share a bucket.
	Prefix string
	// Endpoint is an S3-compatible store's URL (S3_ENDPOINT): MinIO,
	// versitygw, R2, Ceph… Setting it switches to path-style addressing,
	// which those stores expect, and defaults the region to us-east-1.
	Endpoint string
	// Region overrides AWS_REGION.
	Region string
	// AccessKeyID and SecretAccessKey, when both set, replace the default
	// credential chain (tests, explicit configuration).
	AccessKeyID     string
	SecretAccessKey string
}

// S3 stores blobs as private objects in a bucket; only presigned URLs reach
// them without credentials. Workers on other machines share checkpoints
// through it without a shared filesystem.
type S3 struct {
	client  *s3.Client
	presign *s3.PresignClient
	bucket  string
	prefix  string
}

// NewS3 builds a client for cfg. It does not contact the store: the first
// operation reports unreachable endpoints or wrong credentials.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("blob store: S3 bucket is empty")
	}
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" && cfg.SecretAccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, "")))
	}
	if cfg.Endpoint != "" {
		// S3-compatible stores lag behind AWS's default CRC trailing
		// checksums (aws-chunked uploads); send checksums only where the
		// API requires them.
		opts = append(opts,
			config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
			config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("blob store: load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		if cfg.Endpoint == "" {
			return nil, errors.New("blob store: AWS_REGION is not set (required for s3:// BLOB_URL without S3_ENDPOINT)")
		}
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			o.UsePathStyle = true
		}
	})
	return &S3{
		client:  client,
		presign: s3.NewPresignClient(client),
		bucket:  cfg.Bucket,
		prefix:  strings.Trim(cfg.Prefix, "/"),
	}, nil
}

// Client exposes the underlying client for administration the Store
// interface does not cover (tests create their bucket with it).
func (s *S3) Client() *s3.Client { return s.client }

func (s *S3) object(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if s.prefix == "" {
		return key, nil
	}
	return s.prefix + "/" + key, nil
}

// Put stores data under key. A single PUT is atomic on S3.
func (s *S3) Put(ctx context.Context, key string, data []byte) error {
	return s.put(ctx, key, bytes.NewReader(data), int64(len(data)))
}

// PutFile uploads the file at path with one streaming PUT: the SDK reads a
// seekable body in chunks (hashing it first over plain HTTP, sending it
// unsigned over TLS), so memory stays flat whatever the size. A single PUT is
// limited to 5 GiB, well above checkpoint sizes.
func (s *S3) PutFile(ctx context.Context, key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	return s.put(ctx, key, f, fi.Size())
}

func (s *S3) put(ctx context.Context, key string, body io.ReadSeeker, size int64) error {
	obj, err := s.object(key)
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:             &s.bucket,
		Key:                &obj,
		Body:               body,
		ContentLength:      aws.Int64(size),
		ContentType:        aws.String(ContentType(key)),
		ContentDisposition: aws.String(ContentDisposition(key)),
	})
	if err != nil {
		return fmt.Errorf("blob store: put s3://%s/%s: %w", s.bucket, obj, err)
	}
	return nil
}

// Get returns the object stored under key.
func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	body, err := s.open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("blob store: get %s: %w", key, err)
	}
	return b, nil
}

// GetToFile streams the object into path (temp file + rename).
func (s *S3) GetToFile(ctx context.Context, key, path string) error {
	body, err := s.open(ctx, key)
	if err != nil {
		return err
	}
	defer body.Close()
	// A short body fails the copy (io.ErrUnexpectedEOF against
	// Content-Length), so a cut connection never leaves a truncated file.
	return writeAtomic(path, func(w io.Writer) error { _, err := io.Copy(w, body); return err })
}

// Reader streams the object under key (one GET).
func (s *S3) Reader(ctx context.Context, key string) (io.ReadCloser, error) { return s.open(ctx, key) }

func (s *S3) open(ctx context.Context, key string) (io.ReadCloser, error) {
	obj, err := s.object(key)
	if err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &obj})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
		}
		return nil, fmt.Errorf("blob store: get s3://%s/%s: %w", s.bucket, obj, err)
	}
	return out.Body, nil
}

// Exists reports whether key holds an object (HEAD).
func (s *S3) Exists(ctx context.Context, key string) (bool, error) {
	obj, err := s.object(key)
	if err != nil {
		return false, err
	}
	_, err = s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &obj})
	if err == nil {
		return true, nil
	}
	if isNotFound(err) {
		return false, nil
	}
	return false, fmt.Errorf("blob store: head s3://%s/%s: %w", s.bucket, obj, err)
}

// Delete removes key; S3 deletes are idempotent.
func (s *S3) Delete(ctx context.Context, key string) error {
	obj, err := s.object(key)
	if err != nil {
		return err
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &obj}); err != nil && !isNotFound(err) {
		return fmt.Errorf("blob store: delete s3://%s/%s: %w", s.bucket, obj, err)
	}
	return nil
}

// SignedURL presigns a GET (SigV4 query authentication): the URL carries the
// signature, so the download needs no API key and never passes through the
// API.
func (s *S3) SignedURL(ctx context.Context, key string, ttl time.Duration) (string, error) {
	obj, err := s.object(key)
	if err != nil {
		return "", err
	}
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &obj},
		s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("blob store: presign s3://%s/%s: %w", s.bucket, obj, err)
	}
	return req.URL, nil
}

// isNotFound recognizes a missing object across AWS and S3-compatible stores,
// which differ in whether HEAD/GET errors carry a typed code. A missing bucket
// is a configuration error, not a missing object.
func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return true
		case "NoSuchBucket":
			return false
		}
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound && (api == nil || api.ErrorCode() != "NoSuchBucket")
}
