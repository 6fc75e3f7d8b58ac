// A TCP proxy of the test's own between the gateway and a shared server (PostgreSQL, MariaDB, Redis), so an
// outage can be staged without touching the server: cut() drops every connection, refuse() turns new ones
// away as they arrive, hang() accepts them and forwards nothing (a server that stopped answering).
import type { Socket, TCPSocketListener } from "bun";

export interface TcpProxy {
  readonly port: number;
  /** Connections currently open through the proxy. */
  readonly open: number;
  /** Closes every open connection at once (both sides). */
  cut(): void;
  /** While on, new connections are closed as soon as they arrive. */
  refuse(on: boolean): void;
  /** While on, nothing is forwarded either way, on open connections and new ones (a server that stopped
   * answering without closing anything). */
  hang(on: boolean): void;
  stop(): void;
}

interface Pair {
  client: Socket<Pair>;
  server: Socket<unknown> | null;
  pending: Uint8Array[];
  hung: boolean;
}

export function startTcpProxy(targetHost: string, targetPort: number): TcpProxy {
  let refusing = false;
  let hanging = false;
  const pairs = new Set<Pair>();
  const close = (p: Pair, abrupt = false) => {
    pairs.delete(p);
    if (abrupt) {
      p.client.terminate();
      p.server?.terminate();
    } else {
      p.client.end();
      p.server?.end();
    }
  };
  const listener: TCPSocketListener<Pair> = Bun.listen<Pair>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        if (refusing) {
          client.end();
          return;
        }
        const p: Pair = { client, server: null, pending: [], hung: hanging };
        client.data = p;
        pairs.add(p);
        if (p.hung) return;
        void Bun.connect({
          hostname: targetHost,
          port: targetPort,
          socket: {
            data(_s, chunk) {
              if (pairs.has(p) && !hanging) p.client.write(chunk);
            },
            close() {
              if (pairs.has(p)) close(p);
            },
            error() {
              if (pairs.has(p)) close(p);
            },
          },
        }).then(
          (server) => {
            if (!pairs.has(p)) {
              server.end();
              return;
            }
            p.server = server;
            for (const c of p.pending.splice(0)) server.write(c);
          },
          () => close(p),
        );
      },
      data(client, chunk) {
        const p = client.data;
        if (!p || p.hung || hanging || !pairs.has(p)) return;
        if (p.server) p.server.write(chunk);
        else p.pending.push(new Uint8Array(chunk));
      },
      close(client) {
        const p = client.data;
        if (p && pairs.has(p)) close(p);
      },
      error(client) {
        const p = client.data;
        if (p && pairs.has(p)) close(p);
      },
    },
  });
  return {
    port: listener.port,
    get open() {
      return pairs.size;
    },
    cut() {
      for (const p of [...pairs]) close(p, true);
    },
    refuse(on) {
      refusing = on;
    },
    hang(on) {
      hanging = on;
    },
    stop() {
      for (const p of [...pairs]) close(p);
      listener.stop(true);
    },
  };
}
