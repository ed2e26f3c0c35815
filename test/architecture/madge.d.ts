/** The part of madge's API the architecture test uses (madge ships no types). */
declare module 'madge' {
  interface MadgeResult {
    obj(): Record<string, string[]>;
    circular(): string[][];
  }
  export default function madge(
    path: string | string[],
    config?: { fileExtensions?: string[]; tsConfig?: string; baseDir?: string; detectiveOptions?: unknown },
  ): Promise<MadgeResult>;
}
