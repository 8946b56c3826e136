// Types of longest-first.mjs, for the vitest configs (TypeScript).
import { BaseSequencer } from "vitest/node";

export declare const durationsFile: string;
export default class LongestFirst extends BaseSequencer {}
