#!/usr/bin/env bash
# Regenerates pb/ (the committed Go stubs of proto/amulet/v1/amulet.proto).
# Needs protoc; installs the pinned plugins with `go install`.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin:$(go env GOPATH)/bin"
go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.10
go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
M=Mamulet/v1/amulet.proto=amuletfault/pb
protoc -I ../../proto \
  --go_out=pb --go_opt=paths=source_relative,$M \
  --go-grpc_out=pb --go-grpc_opt=paths=source_relative,$M \
  amulet/v1/amulet.proto
mv pb/amulet/v1/*.go pb/ && rm -rf pb/amulet
