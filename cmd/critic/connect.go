package main

import (
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/criticml/critic/handlers"
)

type watermillMessage = message.Message

// registerConnect mounts the Connect/gRPC service on the same port.
func registerConnect(mux *http.ServeMux, s *server, auth *handlers.Authenticator, maxBody int64) {}
