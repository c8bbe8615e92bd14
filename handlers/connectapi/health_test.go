package connectapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Every service the schema declares is listed for health and reflection: a
// service added to schema/critic/v1 without a line in Services would be
// invisible to grpcurl and to gRPC probes.
func TestServicesListsEverySchemaService(t *testing.T) {
	var declared []string
	protoregistry.GlobalFiles.RangeFilesByPackage("critic.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			declared = append(declared, string(f.Services().Get(i).FullName()))
		}
		return true
	})
	require.NotEmpty(t, declared)
	for _, s := range declared {
		require.True(t, strings.HasPrefix(s, "critic.v1."))
	}
	require.ElementsMatch(t, declared, Services)
}
