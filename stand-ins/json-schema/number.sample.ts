/**
 * Sample numbers for the JSON-schema sampler: a value inside minimum/maximum (inclusive or
 * exclusive, draft-4 or numeric form) that honours multipleOf and integer.
 */
import type { Schema } from './schema.resolve.ts';

export interface Bounds {
  lo: number;
  hi: number;
  loEx: boolean;
  hiEx: boolean;
}

export function bounds(s: Schema): Bounds {
  let lo = -Infinity;
  let hi = Infinity;
  let loEx = false;
  let hiEx = false;
  if (typeof s.minimum === 'number') lo = s.minimum;
  if (typeof s.maximum === 'number') hi = s.maximum;
  if (s.exclusiveMinimum === true) loEx = true; // draft 4 form
  if (s.exclusiveMaximum === true) hiEx = true;
  if (typeof s.exclusiveMinimum === 'number' && s.exclusiveMinimum >= lo) {
    lo = s.exclusiveMinimum;
    loEx = true;
  }
  if (typeof s.exclusiveMaximum === 'number' && s.exclusiveMaximum <= hi) {
    hi = s.exclusiveMaximum;
    hiEx = true;
  }
  return { lo, hi, loEx, hiEx };
}

/** Picks a finite window inside the bounds, preferring [0, 100]. */
function pickWindow(b: Bounds): [number, number] {
  const a = Math.max(b.lo, 0);
  const c = Math.min(b.hi, 100);
  if (a < c || (a === c && !(a === b.lo && b.loEx) && !(c === b.hi && b.hiEx))) return [a, c];
  if (b.hi < 0 || (b.hi === 0 && b.hiEx)) return [Math.max(b.lo, b.hi - 100), b.hi];
  return [b.lo, Math.min(b.hi, b.lo + 100)];
}

function decimals(n: number): number {
  const str = String(n);
  if (str.includes('e-')) return Number(str.split('e-')[1]);
  const dot = str.indexOf('.');
  return dot < 0 ? 0 : str.length - dot - 1;
}

export function genNumber(s: Schema, integer: boolean, rng: () => number): number {
  const b = bounds(s);
  let step = typeof s.multipleOf === 'number' && s.multipleOf > 0 ? s.multipleOf : integer ? 1 : 0;
  if (integer && step > 0 && !Number.isInteger(step)) step = Math.ceil(step);
  const f = 0.05 + 0.9 * rng();

  if (step > 0) {
    let kLo = Math.ceil(b.lo / step);
    if (b.loEx && kLo * step <= b.lo) kLo++;
    let kHi = Math.floor(b.hi / step);
    if (b.hiEx && kHi * step >= b.hi) kHi--;
    let a: number;
    let c: number;
    if (Number.isFinite(kLo) || Number.isFinite(kHi)) {
      const [wa, wc] = pickWindow({ lo: kLo * step, hi: kHi * step, loEx: false, hiEx: false });
      a = Math.ceil(wa / step);
      c = Math.floor(wc / step);
    } else {
      a = 0;
      c = Math.floor(100 / step) || 1;
    }
    if (c < a) c = a;
    const k = a + Math.floor(f * (c - a + 1));
    const d = decimals(step);
    const value = Math.min(k, c) * step;
    return d > 0 ? Number(value.toFixed(d)) : value;
  }

  const [a, c] = pickWindow(b);
  if (a === c) return a;
  const ok = (v: number) => (b.loEx ? v > b.lo : v >= b.lo) && (b.hiEx ? v < b.hi : v <= b.hi);
  const raw = a + (c - a) * f;
  const rounded = Math.round(raw * 100) / 100;
  if (ok(rounded)) return rounded;
  if (ok(raw)) return raw;
  return (a + c) / 2;
}
