/**
 * Plausible answers for the demo's AI stand-in: a keyword triage and a templated reply,
 * shaped by the request's JSON schema name. The service still validates them as it would
 * a real model's output.
 */
export function demoResponder(body: { messages?: { role: string; content: string }[]; input?: unknown }, ctx: { schemaName?: string }) {
  const text = JSON.stringify(body.messages ?? body.input ?? '').toLowerCase();
  if (ctx.schemaName && /draft|reply/i.test(ctx.schemaName)) {
    const friendly = text.includes('friendly');
    const short = text.includes('short');
    const language = /german|deutsch/.test(text) ? 'de' : /french|français/.test(text) ? 'fr' : 'en';
    const greeting = language === 'de' ? 'Hallo' : language === 'fr' ? 'Bonjour' : friendly ? 'Hi there' : 'Hello';
    const bodyText = short
      ? `${greeting},\n\nThanks for your message — I'll get back to you shortly.`
      : `${greeting},\n\nThank you for getting in touch. I have read your message and will look into it today. ` +
        `If anything else comes up in the meantime, just reply to this thread.\n\nBest regards`;
    return { subject: 'Re: your message', body: bodyText, language };
  }
  const urgent = /urgent|asap|immediately|outage|deadline/.test(text);
  const question = /\?|could you|can you|please/.test(text);
  const newsletter = /newsletter|unsubscribe|digest|promotion/.test(text);
  return {
    priority: urgent ? 'URGENT' : newsletter ? 'LOW' : question ? 'IMPORTANT' : 'NORMAL',
    replyStatus: newsletter ? 'NO_REPLY_NEEDED' : question || urgent ? 'NEEDS_REPLY' : 'WAITING_ON_OTHERS',
    confidence: urgent || newsletter ? 0.91 : 0.74,
    reason: urgent ? 'The sender asks for quick action.' : newsletter ? 'Looks like a bulk mailing.' : question ? 'The sender asks a question.' : 'Informational message.',
    suggestedAction: urgent ? 'Reply today.' : newsletter ? 'Archive or skim later.' : question ? 'Answer the question.' : 'No action needed right now.',
  };
}
