# Switchyard: build the single binary with Bun, run it on a slim Debian base as a non-root user.
#   docker build -t switchyard .
#   docker run -d -p 3000:3000 -v switchyard-data:/data switchyard
# Multi-arch: docker buildx build --platform linux/amd64,linux/arm64 -t switchyard .  (each platform compiles natively)

FROM oven/bun:1.4.5 AS build
WORKDIR /src
COPY package.json package-lock.json bunfig.toml tsconfig.json ./
RUN bun install --frozen-lockfile --ignore-scripts
COPY . .
# Console bundled, gzip copies made, everything embedded; output: dist/switchyard
RUN bun run scripts/build.ts

FROM debian:bookworm-slim
# ca-certificates: HTTPS to upstream providers; tzdata: the TZ variable.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 switchyard \
 && useradd --system --uid 10001 --gid switchyard --home-dir /data --shell /usr/sbin/nologin switchyard \
 && mkdir -p /data && chown switchyard:switchyard /data
COPY --from=build /src/dist/switchyard /usr/local/bin/switchyard
USER switchyard
WORKDIR /data
ENV PORT=3000 DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/switchyard", "--healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/switchyard"]
