/**
 * Spanish and Japanese mail. Japanese business mail states urgency and requests politely
 * (至急, ご確認いただけますでしょうか): a triage that keys on blunt English words misses them.
 */
import { OWNER, type LabelledMessage } from './types.ts';

const owner = { fromName: OWNER.name, fromAddress: OWNER.address };

export const SPANISH: LabelledMessage[] = [
  {
    id: 'es-owner-signature-1',
    ...owner,
    subject: 'Contrato firmado antes de las 17:00 de hoy',
    bodyText:
      'Hola Javier,\n\nnecesito el contrato firmado antes de las 17:00 de hoy para poder enviarlo al notario. ¿Me lo devuelves firmado en cuanto lo tengas?\n\nGracias,\nSam',
    expected: { priority: 'URGENT', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['es', 'personal', 'owner-sent', 'deadline'],
  },
  {
    id: 'es-lease-review-1',
    fromName: 'Javier Ruiz',
    fromAddress: 'javier.ruiz@ruiz-abogados.example',
    subject: 'Revisión del contrato de arrendamiento',
    bodyText:
      'Hola Sam,\n\n¿podrías revisar el borrador del contrato de arrendamiento y enviarme tus comentarios antes del lunes? El propietario quiere firmar esa semana.\n\nUn saludo,\nJavier Ruiz',
    expected: { priority: 'IMPORTANT', replyStatus: 'NEEDS_REPLY' },
    tags: ['es', 'personal'],
  },
  {
    id: 'es-flight-change-1',
    fromName: 'Iberavia',
    fromAddress: 'notificaciones@iberavia.example',
    subject: 'Cambio en tu vuelo IB3170 del 14 de marzo',
    bodyText:
      'Tu vuelo Madrid - Berlín del 14 de marzo sale ahora a las 07:15 en lugar de a las 09:40. Si el nuevo horario te conviene, no necesitas hacer nada.\nEste es un mensaje automático.',
    expected: { priority: 'IMPORTANT', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['es', 'automated', 'travel'],
  },
  {
    id: 'es-dinner-1',
    fromName: 'Carmen López',
    fromAddress: 'carmen.lopez@correo.example',
    subject: '¿Cena el viernes?',
    bodyText:
      '¡Hola! ¿Te apetece cenar el viernes con Luis y conmigo? Dime si puedes y reservo mesa para las nueve.\n\nCarmen',
    expected: { priority: 'NORMAL', replyStatus: 'NEEDS_REPLY' },
    tags: ['es', 'personal'],
  },
  {
    id: 'es-photos-1',
    fromName: 'Carmen López',
    fromAddress: 'carmen.lopez@correo.example',
    subject: 'Fotos de la excursión',
    bodyText: '¡Aquí tienes las fotos de la excursión del domingo! Lo pasamos genial.\n\nBesos, Carmen',
    expected: { priority: 'NORMAL', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['es', 'personal'],
  },
  {
    id: 'es-owner-restaurant-1',
    ...owner,
    subject: 'El restaurante de Valencia',
    bodyText:
      'Carmen, sin prisa: cuando puedas, mándame el nombre de aquel restaurante de Valencia del que hablamos.\n\nSam',
    expected: { priority: 'LOW', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['es', 'personal', 'owner-sent'],
  },
  {
    id: 'es-newsletter-1',
    fromName: 'Cocina Fácil',
    fromAddress: 'boletin@cocinafacil.example',
    subject: 'Boletín semanal: 5 recetas para la primavera',
    bodyText:
      'Esta semana: espárragos a la plancha, crema de guisantes y tres postres con fresas.\n\nDarse de baja | Ver en el navegador',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['es', 'newsletter'],
  },
  {
    id: 'es-phishing-bank-1',
    fromName: 'Banco Nacional',
    fromAddress: 'seguridad@banconacional-verificacion.example',
    subject: 'Su cuenta ha sido bloqueada temporalmente',
    bodyText:
      'Estimado cliente: hemos detectado actividad inusual. Para desbloquear su cuenta, introduzca sus datos en https://banconacional-verificacion.example/acceso en las próximas 12 horas.',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['es', 'phishing'],
  },
];

export const JAPANESE: LabelledMessage[] = [
  {
    id: 'ja-outage-1',
    fromName: '佐藤 健',
    fromAddress: 'k.sato@tanaka-shoji.example',
    subject: '【至急】本番環境にログインできません',
    bodyText:
      'Sam様\n\nお世話になっております。本日8時頃から本番環境に誰もログインできない状態です。業務が止まっておりますので、至急状況をご連絡いただけますでしょうか。\n\n田中商事 佐藤',
    expected: { priority: 'URGENT', replyStatus: 'NEEDS_REPLY' },
    tags: ['ja', 'work', 'outage', 'client'],
  },
  {
    id: 'ja-estimate-1',
    fromName: '鈴木 花子',
    fromAddress: 'h.suzuki@tanaka-shoji.example',
    subject: 'お見積りご承認のお願い',
    bodyText:
      'Sam様\n\n先日お送りした第2フェーズのお見積りについて、13日(金)までにご承認いただけますでしょうか。社内の予算締めがございます。\n\n鈴木',
    expected: { priority: 'IMPORTANT', replyStatus: 'NEEDS_REPLY' },
    tags: ['ja', 'work', 'client'],
  },
  {
    id: 'ja-meeting-1',
    fromName: '鈴木 花子',
    fromAddress: 'h.suzuki@tanaka-shoji.example',
    subject: '来週の定例会議の日程について',
    bodyText:
      'Sam様\n\n来週の定例会議ですが、17日(火)と19日(木)のどちらがご都合よろしいでしょうか。ご返信をお待ちしております。\n\n鈴木',
    expected: { priority: 'NORMAL', replyStatus: 'NEEDS_REPLY' },
    tags: ['ja', 'work', 'client'],
  },
  {
    id: 'ja-received-1',
    fromName: '佐藤 健',
    fromAddress: 'k.sato@tanaka-shoji.example',
    subject: '資料受領のお礼',
    bodyText: 'Sam様\n\n資料を確かに受領いたしました。ありがとうございました。\n\n佐藤',
    expected: { priority: 'NORMAL', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['ja', 'work'],
  },
  {
    id: 'ja-owner-book-1',
    ...owner,
    subject: 'この前の本のタイトル',
    bodyText: '急ぎではないので、時間があるときに、この前話していた本のタイトルを教えてください。\n\nSam',
    expected: { priority: 'LOW', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['ja', 'personal', 'owner-sent'],
  },
  {
    id: 'ja-recruiter-1',
    fromName: 'キャリアリンク 山田',
    fromAddress: 'yamada@careerlink.example',
    subject: '【スカウト】テックリード候補としてご連絡しました',
    bodyText:
      'はじめまして。キャリアリンクの山田と申します。ご経歴を拝見し、急成長中の企業のテックリード職をご紹介したくご連絡しました。一度カジュアルにお話しできませんか。',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['ja', 'recruiter', 'preference'],
  },
  {
    id: 'ja-newsletter-1',
    fromName: '週刊テックニュース',
    fromAddress: 'news@technews-weekly.example',
    subject: '今週のテックニュース: 生成AIとクラウド料金の改定',
    bodyText:
      '今週の主なニュース: 生成AIの新モデル、クラウド各社の料金改定、セキュリティ勧告のまとめ。\n\n配信停止はこちら',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['ja', 'newsletter'],
  },
  {
    id: 'ja-phishing-account-1',
    fromName: 'オンラインストア',
    fromAddress: 'account-update@0nline-store.example',
    subject: '【重要】お客様のアカウントは一時停止されました',
    bodyText:
      'お客様のアカウントで不審なログインが確認されたため、一時停止いたしました。24時間以内に https://0nline-store.example/verify から情報を更新してください。更新がない場合、アカウントは削除されます。',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['ja', 'phishing'],
  },
];
