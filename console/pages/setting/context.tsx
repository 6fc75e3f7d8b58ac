import { createContext, useContext } from "react";

export interface SettingsState {
  /** The option values as last loaded or saved (secrets come back empty). */
  options: Record<string, string>;
  /** Records values the server accepted, so the next save compares against them. */
  commit: (values: Record<string, string>) => void;
  reload: () => Promise<void>;
}

export const SettingsContext = createContext<SettingsState>({ options: {}, commit: () => {}, reload: async () => {} });
export const useSettings = () => useContext(SettingsContext);
