// The built-in brand mark, used when the admin has not set a Logo (the bundler turns it into a URL).
import builtInLogo from "../logo.svg";

export const logoUrl = (configured?: string) => configured || builtInLogo;
