# meka serve in a container: the static release binary (CGO_ENABLED=0) on
# an empty image, no shell, no libc, running as nobody, its sessions and
# config in the /data volume.
#
# The build context is a directory holding the binary for the image's
# platform, named meka (a release archive unpacked, or a build):
#
#   CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o meka ./cmd/meka
#   docker build -t meka .
#   docker run --network host -v meka-data:/data -e OPENAI_API_KEY meka
#
# meka serve listens on 127.0.0.1:7878 and refuses an address beyond
# loopback without TLS ([serve] tls_cert, tls_key in the config file,
# /data/.config/meka/config.toml, or MEKA_CONFIG),
# so --network host, or `docker exec` into the container, reaches it.
# Confined commands need Landlock or user namespaces, which a container
# often lacks: meka doctor says which guarantees hold (docs/benchmarks.md).
#
# BASE lends the CA certificates and the user database; nothing of it runs
# and none of it but those files is in the image.
ARG BASE=docker.io/library/debian:bookworm-slim
FROM ${BASE} AS base

FROM scratch
COPY --from=base /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=base /etc/passwd /etc/group /etc/
# /srv is empty in Debian: these make an empty /data and /tmp owned by
# nobody, the only user here, as a scratch image has neither.
COPY --from=base --chown=65534:65534 /srv /data
COPY --from=base --chown=65534:65534 /srv /tmp
COPY meka /usr/local/bin/meka
ENV HOME=/data MEKA_DATA_DIR=/data TMPDIR=/tmp
VOLUME /data
WORKDIR /data
USER 65534:65534
ENTRYPOINT ["/usr/local/bin/meka", "serve"]
