# qrel_exporter's image for those who build with docker (or podman, buildah): the same image
# scripts/build-image.sh makes without a daemon (docs/kubernetes.md#image), on Debian's slim base.
# tests/artifacts/image.sh compares this file's user, entry point, command, port and labels with
# that image's configuration, so the two stay equivalent. Build the package first, then:
#   cmake --build build --target package
#   docker build --build-arg VERSION=0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" \
#     -f Dockerfile -t qrel/qrel_exporter:0.1.0 build
# (the context is the build directory, which holds qrel_<version>_<arch>.deb).
FROM debian:bookworm-slim
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG TARGETARCH=amd64
COPY qrel_${VERSION}_${TARGETARCH}.deb /tmp/qrel.deb
# The user 65532 (the Deployment's runAsUser) and the package with its libraries and the CA
# bundle; its postinst also makes the system user qrel, which the image does not run as.
RUN groupadd --gid 65532 nonroot \
  && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin --comment "qrel exporter" nonroot \
  && apt-get update \
  && apt-get install -y --no-install-recommends /tmp/qrel.deb ca-certificates \
  && rm -rf /var/lib/apt/lists/* /tmp/qrel.deb
USER 65532:65532
WORKDIR /
EXPOSE 19318/tcp
ENTRYPOINT ["/usr/bin/qrel_exporter"]
CMD ["--config.file=/etc/qrel/qrel.yml"]
LABEL org.opencontainers.image.title="qrel_exporter" \
  org.opencontainers.image.description="Prometheus exporter for message-queue reliability" \
  org.opencontainers.image.version="${VERSION}" \
  org.opencontainers.image.revision="${REVISION}" \
  org.opencontainers.image.vendor="the qrel authors"
