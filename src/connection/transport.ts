/**
 * How a script travels: as the standard input of `sh -s`, not as an argument, because one
 * argv string is capped at 128 KiB on Linux and scripts carry file contents. The script is
 * wrapped in one brace group so the shell reads all of it before running any of it, with the
 * group's stdin from /dev/null: no command inside can swallow the rest of the script.
 */
export function scriptAsStdin(script: string): string {
  return `{\n${script}\n} </dev/null\n`;
}

/** With caller-supplied stdin the script has to travel as an argument instead. */
export const MAX_INLINE_SCRIPT = 100 * 1024;
