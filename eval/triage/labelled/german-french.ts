/**
 * German and French mail: the same kinds as in English, so that a miss can be told apart
 * from a language the model reads less well. The owner answers in whatever language was
 * written to them.
 */
import { OWNER, type LabelledMessage } from './types.ts';

const owner = { fromName: OWNER.name, fromAddress: OWNER.address };

export const GERMAN: LabelledMessage[] = [
  {
    id: 'de-outage-1',
    fromName: 'Stefan Braun',
    fromAddress: 'stefan.braun@kunde-gmbh.example',
    subject: 'Dringend: Shop seit 8 Uhr nicht erreichbar',
    bodyText:
      'Hallo Sam,\n\nunser Onlineshop ist seit 8 Uhr nicht erreichbar, wir verlieren gerade Bestellungen. Bitte melden Sie sich sofort, wer sich darum kümmert und wann es wieder läuft.\n\nStefan Braun',
    expected: { priority: 'URGENT', replyStatus: 'NEEDS_REPLY' },
    tags: ['de', 'work', 'outage', 'client'],
  },
  {
    id: 'de-budget-1',
    fromName: 'Katrin Vogel',
    fromAddress: 'katrin@northwind.example',
    subject: 'Budgetfreigabe für die Schulungen bis Donnerstag',
    bodyText:
      'Hi Sam, kannst du bis Donnerstag die 6.000 € für das Schulungsprogramm freigeben? Sonst verfallen die Frühbucherplätze.\n\nDanke, Katrin',
    expected: { priority: 'IMPORTANT', replyStatus: 'NEEDS_REPLY' },
    tags: ['de', 'work'],
  },
  {
    id: 'de-owner-quote-1',
    ...owner,
    subject: 'Angebot für die Überarbeitung der Website',
    bodyText:
      'Guten Tag Frau Albers,\n\nkönnten Sie uns bis zum 20. März ein Angebot für die Überarbeitung unserer Website schicken? Wir möchten im April beginnen.\n\nViele Grüße\nSam Rivera',
    expected: { priority: 'IMPORTANT', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['de', 'work', 'owner-sent'],
  },
  {
    id: 'de-hiking-1',
    fromName: 'Lena Schmidt',
    fromAddress: 'lena.schmidt@post.example',
    subject: 'Wandern am Samstag?',
    bodyText:
      'Hast du am Samstag Lust auf die Runde um den Tegernsee? Sag mir bis Freitag Bescheid, dann reserviere ich den Zug.\n\nLena',
    expected: { priority: 'NORMAL', replyStatus: 'NEEDS_REPLY' },
    tags: ['de', 'personal'],
  },
  {
    id: 'de-invite-1',
    fromName: 'Katrin Vogel (über Kalender)',
    fromAddress: 'kalender@northwind.example',
    subject: 'Einladung: Quartalsplanung @ Mi 18. März 10:00 - 12:00',
    bodyText:
      'Katrin Vogel hat Sie zu Quartalsplanung eingeladen.\nMittwoch, 18. März, 10:00 - 12:00, Raum 3\nTeilnehmen? Ja - Vielleicht - Nein',
    expected: { priority: 'NORMAL', replyStatus: 'NEEDS_REPLY' },
    tags: ['de', 'automated', 'calendar', 'preference'],
  },
  {
    id: 'de-landlord-1',
    fromName: 'Hausverwaltung Krüger',
    fromAddress: 'info@hv-krueger.example',
    subject: 'Re: Tropfender Wasserhahn in der Küche',
    bodyText:
      'Sehr geehrter Herr Rivera,\n\nvielen Dank für Ihre Meldung. Wir haben einen Installateur beauftragt; er meldet sich bis Ende der Woche bei Ihnen, um einen Termin zu vereinbaren.\n\nMit freundlichen Grüßen\nHausverwaltung Krüger',
    expected: { priority: 'NORMAL', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['de', 'personal'],
  },
  {
    id: 'de-thanks-1',
    fromName: 'Lena Schmidt',
    fromAddress: 'lena.schmidt@post.example',
    subject: 'Danke für die Fotos!',
    bodyText:
      'Die Bilder vom Wochenende sind wunderschön geworden, danke dir! Das Foto am Gipfel hängt jetzt bei uns im Flur.\n\nLena',
    expected: { priority: 'NORMAL', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['de', 'personal'],
  },
  {
    id: 'de-restaurant-1',
    fromName: 'Jan Hoffmann',
    fromAddress: 'jan.hoffmann@post.example',
    subject: 'Kleine Frage zu Lissabon',
    bodyText:
      'Kein Stress, aber weißt du noch, wie das kleine Restaurant in Lissabon hieß, wo wir den Fisch gegessen haben? Wir fahren im Sommer hin.\n\nJan',
    expected: { priority: 'LOW', replyStatus: 'NEEDS_REPLY' },
    tags: ['de', 'personal'],
  },
  {
    id: 'de-newsletter-1',
    fromName: 'Technikblick',
    fromAddress: 'newsletter@technikblick.example',
    subject: 'Ihr Wochenrückblick: KI, Datenschutz und neue Laptops',
    bodyText:
      'Die wichtigsten Meldungen der Woche: neue Regeln für KI-Anbieter, ein Datenleck bei einem Versandhändler und die besten Laptops unter 1.000 €.\n\nNewsletter abbestellen | Im Browser ansehen',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['de', 'newsletter'],
  },
  {
    id: 'de-phishing-parcel-1',
    fromName: 'Paketdienst',
    fromAddress: 'service@paket-zustellung-info.example',
    subject: 'Ihr Paket konnte nicht zugestellt werden',
    bodyText:
      'Sehr geehrter Kunde, für Ihre Sendung ist eine Zollgebühr von 1,99 € offen. Bitte bezahlen Sie innerhalb von 24 Stunden unter https://paket-zustellung-info.example/zahlung, sonst wird das Paket zurückgeschickt.',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['de', 'phishing'],
  },
];

export const FRENCH: LabelledMessage[] = [
  {
    id: 'fr-payroll-1',
    fromName: 'Claire Dubois',
    fromAddress: 'claire.dubois@northwind.example',
    subject: 'Urgent : virement des salaires bloqué',
    bodyText:
      "Bonjour Sam,\n\nla banque a bloqué le virement des salaires de mars. Il faut ta validation avant 14h aujourd'hui, sinon les salaires partiront avec trois jours de retard. Peux-tu me répondre dès que possible ?\n\nClaire",
    expected: { priority: 'URGENT', replyStatus: 'NEEDS_REPLY' },
    tags: ['fr', 'work', 'finance'],
  },
  {
    id: 'fr-cert-alert-1',
    fromName: 'Supervision',
    fromAddress: 'alertes@supervision.northwind.example',
    subject: "[ALERTE] Le certificat TLS de api.northwind.example expire aujourd'hui",
    bodyText:
      'Le certificat expire le 10/03/2026 à 23:59 UTC. Le renouvellement automatique a échoué (défi DNS refusé).\nMessage automatique, merci de ne pas répondre.',
    expected: { priority: 'URGENT', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['fr', 'automated', 'alert'],
  },
  {
    id: 'fr-mortgage-1',
    fromName: 'Mathieu Laurent, Banque Horizon',
    fromAddress: 'm.laurent@banque-horizon.example',
    subject: 'Votre demande de prêt immobilier',
    bodyText:
      "Bonjour Monsieur Rivera,\n\nnous avons bien reçu votre dossier complet. Le comité de crédit l'examinera cette semaine et je reviendrai vers vous d'ici vendredi avec une réponse.\n\nCordialement,\nMathieu Laurent",
    expected: { priority: 'IMPORTANT', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['fr', 'personal', 'finance'],
  },
  {
    id: 'fr-ladder-1',
    fromName: 'Michel Perrin',
    fromAddress: 'michel.perrin@courriel.example',
    subject: 'Échelle pour ce week-end',
    bodyText:
      'Bonjour Sam, pourrais-tu me prêter ton échelle ce week-end pour nettoyer les gouttières ? Dis-moi quand je peux passer la chercher.\n\nMichel',
    expected: { priority: 'NORMAL', replyStatus: 'NEEDS_REPLY' },
    tags: ['fr', 'personal'],
  },
  {
    id: 'fr-merci-1',
    fromName: 'Sophie Martin',
    fromAddress: 'sophie.martin@courriel.example',
    subject: 'Merci pour samedi',
    bodyText: "Merci encore pour le dîner de samedi, c'était une très belle soirée ! À bientôt.\n\nSophie",
    expected: { priority: 'NORMAL', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['fr', 'personal'],
  },
  {
    id: 'fr-alumni-poll-1',
    fromName: 'Amicale des anciens',
    fromAddress: 'contact@amicale-anciens.example',
    subject: 'Sondage : date du prochain apéro des anciens',
    bodyText:
      "Salut à tous ! Plutôt le 4 ou le 11 avril pour le prochain apéro ? Répondez quand vous voulez, on fixera la date à la fin du mois.\n\nL'amicale",
    expected: { priority: 'LOW', replyStatus: 'NEEDS_REPLY' },
    tags: ['fr', 'personal'],
  },
  {
    id: 'fr-support-ack-1',
    fromName: 'Service client Lumio',
    fromAddress: 'support@lumio.example',
    subject: 'Nous avons bien reçu votre demande n° 55821',
    bodyText:
      'Votre demande concernant votre facture a été transmise à notre équipe. Un conseiller vous répondra sous 48 heures.\nCeci est un message automatique.',
    expected: { priority: 'LOW', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['fr', 'automated', 'support', 'preference'],
  },
  {
    id: 'fr-phishing-refund-1',
    fromName: 'Assurance Santé',
    fromAddress: 'remboursement@assurance-remboursement.example',
    subject: 'Remboursement en attente : 148,50 €',
    bodyText:
      'Cher assuré, un remboursement de 148,50 € est en attente. Pour le recevoir, confirmez vos coordonnées bancaires sous 48 heures sur https://assurance-remboursement.example/confirmer.',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['fr', 'phishing'],
  },
];
