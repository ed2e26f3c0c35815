/** Number formats of the bench's Markdown (report*.ts). */
export const f0 = (n: number | null | undefined) => (n == null || Number.isNaN(n) ? 'n/a' : n.toFixed(0));
export const f1 = (n: number | null | undefined) => (n == null || Number.isNaN(n) ? 'n/a' : n.toFixed(1));
export const f2 = (n: number | null | undefined) => (n == null || Number.isNaN(n) ? 'n/a' : n.toFixed(2));
export const pct = (n: number | null | undefined) => (n == null ? 'n/a' : `${(n * 100).toFixed(0)} %`);
export const k = (n: number) => (n >= 1000 ? `${n / 1000}k` : String(n));
export const ok = (b: boolean) => (b ? 'yes' : '**no**');
export const s1 = (ms: number | null | undefined) => (ms == null ? 'timeout' : `${(ms / 1000).toFixed(1)} s`);
