/** A tiny cookie-keeping HTTP client that behaves like a browser towards one server. */
export class Browser {
  readonly cookies = new Map<string, string>();
  readonly baseUrl: string;
  readonly origin?: string;
  constructor(baseUrl: string, origin?: string) {
    this.baseUrl = baseUrl;
    this.origin = origin;
  }

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async fetch(pathOrUrl: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
    const url = pathOrUrl.startsWith('http') ? pathOrUrl : `${this.baseUrl}${pathOrUrl}`;
    const headers = new Headers(init.headers);
    if (this.cookies.size && new URL(url).origin === new URL(this.baseUrl).origin)
      headers.set('Cookie', this.cookieHeader());
    if (this.origin && !headers.has('Origin')) headers.set('Origin', this.origin);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('Content-Type', 'application/json');
      body = JSON.stringify(init.json);
    }
    const res = await fetch(url, { ...init, headers, body, redirect: 'manual' });
    if (new URL(url).origin === new URL(this.baseUrl).origin) this.store(res);
    return res;
  }

  private store(res: Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a)) || value === '';
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  /** Follows redirects by hand (so the test sees every hop), up to `max`. */
  async follow(pathOrUrl: string, max = 5): Promise<{ res: Response; hops: string[] }> {
    const hops: string[] = [];
    let res = await this.fetch(pathOrUrl);
    while (res.status >= 300 && res.status < 400 && hops.length < max) {
      const next = new URL(res.headers.get('location')!, res.url).toString();
      hops.push(next);
      res = await this.fetch(next);
    }
    return { res, hops };
  }
}
