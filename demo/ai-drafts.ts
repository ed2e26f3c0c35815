/**
 * The demo AI stand-in's reply drafts: composed from the thread and the reply options the
 * service sent as JSON (see ai-responder.ts), in the asked tone, length and language, and
 * answering the latest message (its subject named, its question or urgency addressed).
 * Where the owner must supply a fact, a [placeholder] stands in, as the prompt asks.
 */
export interface DraftOptionsData {
  /** The service's wording: 'natural and polite', 'professional and concise', 'warm and friendly'. */
  tone?: string;
  /** 'at most 80 words', 'about 80 to 180 words', 'about 180 to 350 words'. */
  length?: string;
  /** A language name, or 'the language of the latest message'. */
  language?: string;
  ownerPreferredTone?: string;
}
interface Msg {
  from?: string;
  subject?: string;
  body?: string;
}
export interface ThreadData {
  subject?: string;
  earlierMessages?: Msg[];
  latestMessage?: Msg;
}

export type Language = 'English' | 'German' | 'French' | 'Spanish';
type Tone = 'friendly' | 'professional' | 'default';
type Length = 'short' | 'medium' | 'long';

interface Phrases {
  greet: Record<Tone, string>;
  thanks: Record<Tone, string>;
  urgent: string;
  question: string;
  request: string;
  info: string;
  followUp: string;
  close: Record<Tone, string>;
  more: string[];
}

const P: Record<Language, Phrases> = {
  English: {
    greet: { friendly: 'Hi {name},', professional: 'Dear {name},', default: 'Hello {name},' },
    thanks: {
      friendly: 'Thanks so much for your message about “{subject}”!',
      professional: 'Thank you for your message regarding “{subject}”.',
      default: 'Thanks for your message about “{subject}”.',
    },
    urgent: 'I understand this is urgent: I am looking into it right now and will send you an update by [time].',
    question: 'To answer your question: [your answer].',
    request: 'I will take a look and get back to you by [date].',
    info: 'Good to know, thanks for keeping me posted.',
    followUp: 'I wanted to follow up on my last message, in case it got buried.',
    close: { friendly: 'Cheers', professional: 'Kind regards', default: 'Best regards' },
    more: [
      'I have read through everything you sent, and the main points are clear to me.',
      'Before I commit to anything, I want to check a few details on my side.',
      'If anything changes in the meantime, just reply to this thread so that we keep everything in one place.',
      'If it helps, I am happy to set up a short call this week; [suggest a time] would work well for me.',
      'Once I have the missing information, I will send you a complete answer together with the next steps.',
      'Please let me know whether anyone else should be included in this conversation, and I will add them.',
      'I would also like to make sure we agree on the timeline, so that nobody is surprised later on.',
      'In the meantime, nothing else is needed from you, and I will keep you informed about any progress.',
      'Thank you again for your patience while I sort out the remaining questions on my end.',
      'Should the situation turn out to be more complicated than expected, I will tell you straight away.',
      'I will also loop in [colleague] if we need a second opinion on the open points.',
      'Over the next few days I will go through the documents carefully so that nothing slips through.',
    ],
  },
  German: {
    greet: { friendly: 'Hallo {name},', professional: 'Guten Tag {name},', default: 'Hallo {name},' },
    thanks: {
      friendly: 'Vielen Dank für deine Nachricht zu „{subject}“!',
      professional: 'Vielen Dank für Ihre Nachricht zu „{subject}“.',
      default: 'Danke für die Nachricht zu „{subject}“.',
    },
    urgent:
      'Ich verstehe, dass es dringend ist: Ich kümmere mich sofort darum und melde mich bis [Uhrzeit] mit einem Zwischenstand.',
    question: 'Zu deiner Frage: [deine Antwort].',
    request: 'Ich sehe es mir an und melde mich bis [Datum].',
    info: 'Gut zu wissen, danke für die Information.',
    followUp: 'Ich wollte kurz an meine letzte Nachricht erinnern, falls sie untergegangen ist.',
    close: { friendly: 'Viele Grüße', professional: 'Mit freundlichen Grüßen', default: 'Beste Grüße' },
    more: [
      'Ich habe alles gelesen, was du geschickt hast, und die wichtigsten Punkte sind mir klar.',
      'Bevor ich etwas zusage, möchte ich auf meiner Seite noch ein paar Details prüfen.',
      'Falls sich in der Zwischenzeit etwas ändert, antworte einfach auf diese Nachricht, damit alles an einem Ort bleibt.',
      'Wenn es hilft, können wir diese Woche kurz telefonieren; [Terminvorschlag] würde mir gut passen.',
      'Sobald mir die fehlenden Informationen vorliegen, schicke ich dir eine vollständige Antwort mit den nächsten Schritten.',
      'Sag mir bitte Bescheid, ob noch jemand in diese Unterhaltung aufgenommen werden sollte.',
      'Außerdem möchte ich sicherstellen, dass wir uns beim Zeitplan einig sind, damit später niemand überrascht wird.',
      'Bis dahin brauchst du nichts weiter zu tun, und ich halte dich über den Fortschritt auf dem Laufenden.',
      'Danke noch einmal für deine Geduld, während ich die offenen Fragen kläre.',
      'Sollte sich die Sache als komplizierter herausstellen als gedacht, sage ich dir sofort Bescheid.',
      'Falls wir eine zweite Meinung zu den offenen Punkten brauchen, beziehe ich [Kollegin oder Kollege] mit ein.',
      'Ich werde mir die Unterlagen in den nächsten Tagen in Ruhe ansehen, damit nichts übersehen wird.',
      'Wenn du es lieber anders organisieren möchtest, sag einfach Bescheid, dann passen wir den Plan gemeinsam an.',
    ],
  },
  French: {
    greet: { friendly: 'Salut {name},', professional: 'Bonjour {name},', default: 'Bonjour {name},' },
    thanks: {
      friendly: 'Merci beaucoup pour ton message au sujet de « {subject} » !',
      professional: 'Je vous remercie pour votre message concernant « {subject} ».',
      default: 'Merci pour votre message au sujet de « {subject} ».',
    },
    urgent:
      'Je comprends que c’est urgent : je m’en occupe tout de suite et je vous envoie un point d’étape avant [heure].',
    question: 'Pour répondre à votre question : [votre réponse].',
    request: 'Je regarde cela et je reviens vers vous d’ici [date].',
    info: 'Bon à savoir, merci de me tenir au courant.',
    followUp: 'Je me permets de revenir vers vous au sujet de mon dernier message.',
    close: { friendly: 'À bientôt', professional: 'Cordialement', default: 'Bien à vous' },
    more: [
      'J’ai lu attentivement tout ce que vous m’avez envoyé et les points principaux sont clairs pour moi.',
      'Avant de m’engager, je souhaite vérifier quelques détails de mon côté.',
      'Si quelque chose change entre-temps, répondez simplement à ce message afin que tout reste au même endroit.',
      'Si cela peut aider, je suis disponible pour un court appel cette semaine ; [proposer un créneau] me conviendrait bien.',
      'Dès que j’aurai les informations manquantes, je vous enverrai une réponse complète avec les prochaines étapes.',
      'Dites-moi si d’autres personnes doivent être ajoutées à cette conversation, et je les inclurai.',
      'Je voudrais aussi m’assurer que nous sommes d’accord sur le calendrier, pour éviter toute surprise plus tard.',
      'En attendant, vous n’avez rien d’autre à faire, et je vous tiendrai informé de l’avancement.',
      'Merci encore pour votre patience pendant que je règle les questions restantes.',
      'Si la situation s’avère plus compliquée que prévu, je vous le dirai immédiatement.',
      'Je solliciterai aussi [collègue] si nous avons besoin d’un deuxième avis sur les points ouverts.',
      'De mon côté, je relirai les documents tranquillement dans les prochains jours pour ne rien oublier.',
      'Si vous préférez vous organiser autrement, dites-le-moi sans hésiter et nous adapterons le plan ensemble.',
    ],
  },
  Spanish: {
    greet: { friendly: '¡Hola, {name}!', professional: 'Estimado/a {name}:', default: 'Hola, {name}:' },
    thanks: {
      friendly: '¡Muchas gracias por tu mensaje sobre «{subject}»!',
      professional: 'Le agradezco su mensaje sobre «{subject}».',
      default: 'Gracias por tu mensaje sobre «{subject}».',
    },
    urgent: 'Entiendo que es urgente: me ocupo de ello ahora mismo y te envío una actualización antes de [hora].',
    question: 'Respecto a tu pregunta: [tu respuesta].',
    request: 'Lo reviso y te respondo antes del [fecha].',
    info: 'Es bueno saberlo, gracias por mantenerme al tanto.',
    followUp: 'Quería hacer un seguimiento de mi último mensaje, por si se perdió.',
    close: { friendly: 'Un abrazo', professional: 'Atentamente', default: 'Saludos' },
    more: [
      'He leído con atención todo lo que me enviaste y los puntos principales me quedan claros.',
      'Antes de comprometerme, quiero comprobar algunos detalles por mi parte.',
      'Si algo cambia mientras tanto, responde a este mensaje para que todo quede en el mismo hilo.',
      'Si te ayuda, podemos hacer una llamada breve esta semana; [propón un horario] me vendría bien.',
      'En cuanto tenga la información que falta, te enviaré una respuesta completa con los próximos pasos.',
      'Dime si alguien más debería participar en esta conversación y lo añadiré.',
      'También quiero asegurarme de que estamos de acuerdo con el calendario, para que nadie se lleve sorpresas.',
      'Mientras tanto, no necesitas hacer nada más y te mantendré informado de los avances.',
      'Gracias de nuevo por tu paciencia mientras resuelvo las preguntas pendientes.',
      'Si la situación resulta más complicada de lo previsto, te avisaré enseguida.',
      'También consultaré a [colega] si necesitamos una segunda opinión sobre los puntos abiertos.',
      'Por mi parte, revisaré los documentos con calma durante los próximos días para no pasar nada por alto.',
      'Si prefieres otra forma de organizarlo, dímelo sin problema y lo adaptamos juntos.',
      'Te agradezco mucho que me lo hayas contado con tiempo, porque así puedo planificar mejor.',
    ],
  },
};

const NAMES: [Language, RegExp][] = [
  ['German', /^(german|deutsch|de)\b/i],
  ['French', /^(french|français|francais|fr)\b/i],
  ['Spanish', /^(spanish|español|espanol|castellano|es)\b/i],
  ['English', /^(english|en)\b/i],
];
const MARKERS: [Language, RegExp][] = [
  ['German', /\b(und|ich|nicht|bitte|danke|hallo|wir|Sie|ist|für|mit|auf)\b/gi],
  ['French', /\b(bonjour|merci|vous|je|nous|est|pour|avec|les|une)\b/gi],
  ['Spanish', /\b(hola|gracias|usted|para|estamos|nosotros|los|una|por favor|el)\b/gi],
];

/** The asked language, or the one the latest message seems written in. */
export function pickLanguage(asked: string | undefined, text: string): Language {
  if (asked && !/^the language of/i.test(asked)) return NAMES.find(([, re]) => re.test(asked.trim()))?.[0] ?? 'English';
  let best: [Language, number] = ['English', 1];
  for (const [lang, re] of MARKERS) {
    const n = text.match(re)?.length ?? 0;
    if (n > best[1]) best = [lang, n];
  }
  return best[0];
}

export const wordCount = (s: string) => s.split(/\s+/).filter(Boolean).length;
const LIMITS: Record<Length, { min: number; max: number }> = {
  short: { min: 0, max: 80 },
  medium: { min: 90, max: 170 },
  long: { min: 190, max: 340 },
};

export function composeDraft(thread: ThreadData | undefined, options: DraftOptionsData | undefined) {
  const latest = thread?.latestMessage ?? {};
  const subject = (thread?.subject || latest.subject || '').replace(/^(re|aw|sv):\s*/i, '').trim() || 'your message';
  const body = latest.body ?? '';
  const tone: Tone = /friendly|warm/i.test(`${options?.tone} ${options?.ownerPreferredTone ?? ''}`)
    ? 'friendly'
    : /professional|formal/i.test(`${options?.tone} ${options?.ownerPreferredTone ?? ''}`)
      ? 'professional'
      : 'default';
  const length: Length = /at most 80/i.test(options?.length ?? '')
    ? 'short'
    : /180 to 350/i.test(options?.length ?? '')
      ? 'long'
      : 'medium';
  const language = pickLanguage(options?.language, `${body} ${latest.subject ?? ''}`);
  const p = P[language];
  const fromOwner = latest.from === 'the mailbox owner';
  const name = fromOwner
    ? (thread?.earlierMessages ?? [])
        .map((m) => m.from)
        .reverse()
        .find((f) => f && f !== 'the mailbox owner')
    : latest.from;
  const first = name && name !== 'the sender' ? name.split(/\s+/)[0]! : '';
  const greeting = first ? p.greet[tone].replace('{name}', first) : p.greet[tone].replace(/ ?,? ?\{name\}/, '');
  const text = `${subject}\n${body}`;
  const core = fromOwner
    ? [p.followUp]
    : [
        p.thanks[tone].replace('{subject}', subject),
        /\burgent\b|\basap\b|\boutage\b|\bdeadline\b|\bimmediately\b|dringend|urgente?\b/i.test(text)
          ? p.urgent
          : /\?/.test(body)
            ? p.question
            : /\b(review|check|send|confirm|prüf|vérifi|revis)/i.test(body)
              ? p.request
              : p.info,
      ];
  const sentences = [...core];
  const { min, max } = LIMITS[length];
  const words = (extra: string[] = []) => wordCount([greeting, ...sentences, ...extra, p.close[tone]].join(' '));
  for (const extra of p.more) {
    if (words() >= min || words([extra]) > max) break;
    sentences.push(extra);
  }
  // Paragraphs of two or three sentences read like a person wrote them.
  const paragraphs: string[] = [];
  for (let i = 0; i < sentences.length; i += length === 'short' ? 3 : 2)
    paragraphs.push(sentences.slice(i, i + (length === 'short' ? 3 : 2)).join(' '));
  return {
    subject: `Re: ${subject}`,
    body: [greeting, ...paragraphs, p.close[tone]].join('\n\n'),
    language,
  };
}
