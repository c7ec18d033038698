#!/bin/sh
# Build the Go example offline, in GOPATH mode over Debian's packaged
# modules (golang-google-protobuf-dev installs google.golang.org/protobuf
# under /usr/share/gocode): protoc-gen-go from that source, the .proto's Go
# package (go_package "contactd/proto/contactdv1") generated into OUT/gopath,
# then the example. No network.
# usage: build.sh SOURCE_DIR OUT_DIR   (OUT_DIR/contactd-go-example)
set -eu
SRC=$1
mkdir -p "$2"
OUT=$(cd "$2" && pwd)
mkdir -p "$OUT/gopath/src"
export GO111MODULE=off GOFLAGS= GOPROXY=off GOCACHE="$OUT/gocache"
export GOPATH="$OUT/gopath:/usr/share/gocode"
go build -o "$OUT/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
protoc --plugin=protoc-gen-go="$OUT/protoc-gen-go" --go_out="$OUT/gopath/src" -I "$SRC/proto" "$SRC/proto/contactd.proto"
rm -rf "$OUT/gopath/src/contactd/example"
mkdir -p "$OUT/gopath/src/contactd/example"
cp "$SRC/client/go/main.go" "$OUT/gopath/src/contactd/example/"
go vet contactd/example
go build -o "$OUT/contactd-go-example" contactd/example
