/** A set of plain Koa routes (OAuth redirects, pages), given the rate-limit middleware of a bucket. */
import type Router from '@koa/router';
import type Koa from 'koa';
import type { BucketName } from '../domain/rate-limit-buckets.ts';

export type RouteInstaller = (routes: Router, helpers: { limit: (bucket: BucketName) => Koa.Middleware }) => void;
