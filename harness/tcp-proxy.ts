/** A switchable TCP proxy, to put a provider that hangs, talks garbage or refuses in front of the service. */

export type ProxyMode = 'forward' | 'hang' | 'garbage' | 'refuse';

export interface TcpProxy {
  readonly host: string;
  readonly port: number;
  /** Drops every open connection, then treats new ones the new way ('refuse' stops listening: ECONNREFUSED). */
  setMode(mode: ProxyMode): Promise<void>;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of `target` that can forward, accept and never answer (a provider
 * that times out), answer bytes that are no protocol at all, or refuse connections.
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const net = await import('node:net');
  let mode: ProxyMode = 'forward';
  const sockets = new Set<import('node:net').Socket>();
  const track = (s: import('node:net').Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = net.createServer((client) => {
    track(client);
    if (mode === 'hang') return;
    if (mode === 'garbage') {
      client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\n\r\n<html>upstream hiccup</html>\x00\xff\xfe');
      return;
    }
    const upstream = net.connect(target.port, target.host);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as { port: number }).port;
  return {
    host: `127.0.0.1:${port}`,
    port,
    async setMode(next) {
      const wasListening = server.listening;
      mode = next;
      for (const s of sockets) s.destroy();
      if (next === 'refuse' && wasListening) await new Promise<void>((r) => server.close(() => r()));
      if (next !== 'refuse' && !wasListening) await listen(port);
    },
    async close() {
      for (const s of sockets) s.destroy();
      if (server.listening) await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
