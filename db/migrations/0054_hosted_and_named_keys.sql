-- A hosted key (retasc key mint --hosted) will never have a watchdog proxy: its claim replies say its own calls renew them; a key's name is what its holder calls it in lists.
ALTER TABLE "agent_keys" ADD COLUMN "hosted" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "agent_keys" ADD COLUMN "name" text;