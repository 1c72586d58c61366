# netkeep: Debian (bookworm) slim with Node 20 and the OS tools it runs. The server runs as the
# unprivileged user `node`; the two tools that need raw sockets (nmap, arp-scan) get CAP_NET_RAW
# and CAP_NET_ADMIN as file capabilities, so nothing runs as root. Run it with host networking
# (docker-compose.yml): presence scanning must see the LAN's ARP traffic.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY test ./test
COPY bench ./bench
COPY ui ./ui
COPY scripts ./scripts
# npm run build: the TypeScript build, then the web console (ui/ into dist/console, with esbuild).
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
# nmap, traceroute, nslookup (dnsutils), speedtest-cli, arp-scan, ip (iproute2) and ping
# (iputils-ping: the scanner's IPv6 all-nodes echo) are what the endpoints and the scanner run;
# setpriv (util-linux) ties the server's life to `npm start` when the image is run that way (its
# CMD starts node directly and does not need it);
# setcap/getcap (libcap2-bin) give and read the capabilities; curl is the health check's client.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
       nmap traceroute dnsutils speedtest-cli arp-scan iproute2 iputils-ping util-linux libcap2-bin ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && setcap cap_net_raw,cap_net_admin+eip /usr/bin/nmap \
    && setcap cap_net_raw,cap_net_admin+eip /usr/sbin/arp-scan \
    && setcap cap_net_raw+ep /usr/bin/ping \
    && mkdir -p /data && chown node:node /data
WORKDIR /app
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root package.json ./
ENV NODE_ENV=production \
    DATA_DIR=/data \
    PORT=20212 \
    HOST=0.0.0.0
USER node
VOLUME ["/data"]
EXPOSE 20212
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD curl -fsS "http://127.0.0.1:${PORT}/health" || exit 1
# node directly (not `npm start`): PID 1 gets SIGTERM from `docker stop` and shuts down cleanly.
CMD ["node", "--max-semi-space-size=2", "--max-old-space-size=512", "dist/src/main.js"]
