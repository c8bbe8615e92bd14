package blob

import (
	"fmt"
	"mime"
	"path"
	"path/filepath"
	"strings"
)

// Location is a parsed BLOB_URL: either a local directory or a bucket and
// prefix. Parsing is separate from opening so configuration can be rejected
// at start, before anything touches the disk or the network.
type Location struct {
	// Scheme is "file" or "s3".
	Scheme string
	// Dir is the absolute directory of a file:// location.
	Dir string
	// Bucket and Prefix of an s3:// location.
	Bucket, Prefix string
}

// ParseURL accepts file:///abs/dir (a relative path after file:// is taken
// relative to the working directory, as earlier versions did) and
// s3://bucket/optional/prefix.
func ParseURL(raw string) (Location, error) {
	if dir, ok := strings.CutPrefix(raw, "file://"); ok {
		if dir == "" {
			return Location{}, fmt.Errorf("%q has no directory (want file:///absolute/dir)", raw)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return Location{}, fmt.Errorf("%q: %w", raw, err)
		}
		return Location{Scheme: "file", Dir: abs}, nil
	}
	if rest, ok := strings.CutPrefix(raw, "s3://"); ok {
		if strings.ContainsAny(rest, "?#") {
			return Location{}, fmt.Errorf("%q: query and fragment are not supported (use S3_ENDPOINT and the AWS_* variables)", raw)
		}
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return Location{}, fmt.Errorf("%q has no bucket (want s3://bucket/prefix)", raw)
		}
		prefix = strings.Trim(prefix, "/")
		if prefix != "" {
			if err := ValidateKey(prefix); err != nil {
				return Location{}, fmt.Errorf("%q: prefix: %w", raw, err)
			}
		}
		return Location{Scheme: "s3", Bucket: bucket, Prefix: prefix}, nil
	}
	return Location{}, fmt.Errorf("%q: want file:///dir or s3://bucket/prefix", raw)
}

// ContentType is the type a download of key is served with, by the local
// handler and (stored on upload) by S3, so browsers and curl treat a
// checkpoint archive the same on both deployments.
func ContentType(key string) string {
	if strings.HasSuffix(key, ".tar.gz") || strings.HasSuffix(key, ".tgz") || strings.HasSuffix(key, ".gz") {
		return "application/gzip"
	}
	return "application/octet-stream"
}

// ContentDisposition makes a download save as the key's base name
// (RFC 6266; non-ASCII names are RFC 2231-encoded).
func ContentDisposition(key string) string {
	return mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(key)})
}
