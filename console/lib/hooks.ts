import { useEffect, useRef, useState } from "react";
import { MOBILE_WIDTH } from "../../server/catalogue/index.ts";

/** True under the mobile width cut-off (600 px). */
export function useIsMobile(): boolean {
  const get = () => (globalThis.innerWidth ?? 1024) < MOBILE_WIDTH;
  const [mobile, setMobile] = useState(get);
  useEffect(() => {
    const on = () => setMobile(get());
    globalThis.addEventListener?.("resize", on);
    return () => globalThis.removeEventListener?.("resize", on);
  }, []);
  return mobile;
}

/** A seconds countdown for "resend (n)" buttons; start() begins a new run. */
export function useCountdown(seconds: number): { left: number; start: () => void } {
  const [left, setLeft] = useState(0);
  const timer = useRef<ReturnType<typeof setInterval> | null>(null);
  useEffect(
    () => () => {
      if (timer.current) clearInterval(timer.current);
    },
    [],
  );
  const start = () => {
    if (timer.current) clearInterval(timer.current);
    setLeft(seconds);
    timer.current = setInterval(() => {
      setLeft((n) => {
        if (n <= 1 && timer.current) {
          clearInterval(timer.current);
          timer.current = null;
        }
        return Math.max(0, n - 1);
      });
    }, 1000);
  };
  return { left, start };
}
