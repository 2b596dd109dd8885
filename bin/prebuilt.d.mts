// Types of bin/prebuilt.mjs (plain JavaScript: it runs before anything can compile TypeScript).
export declare const DIST: string;
export declare const SOURCE_DIRS: string[];
export declare function filesUnder(root: string, dir: string, ext: string): string[];
export declare function sourceDigest(root: string, files?: string[]): string;
export declare function sourceStamp(root: string, files?: string[]): string;
export declare function manifestPath(root: string): string;
export declare function manifestOf(root: string): { digest: string; stamp: string };
export declare function prebuiltIsCurrent(root: string): boolean;
export declare function prebuiltFor(root: string, file: string): string | undefined;
export declare function prebuiltPlaybookImporter(root: string): (file: string) => Promise<unknown>;
