# The image of docs/kubernetes.yaml (both layouts): `make image`.
# A static binary on a minimal base, run as a non-root user.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/incidentlib ./cmd/incidentlib

FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.ref.name="ghcr.io/incidentlib/incidentlib"
COPY --from=build /out/incidentlib /usr/local/bin/incidentlib
USER 65532:65532
WORKDIR /data
# 8080: HTTP (GraphQL, REST, /metrics); 6222: the cluster's routes.
EXPOSE 8080 6222
ENTRYPOINT ["/usr/local/bin/incidentlib"]
CMD ["serve", "--addr", "0.0.0.0:8080", "--db", "/data/incidentlib.db"]
