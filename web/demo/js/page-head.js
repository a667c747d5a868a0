// What every demo page's <head> needs besides its charset, title and own
// module, written once. A classic script, so it runs while the parser is still
// in <head>: the viewport applies before the first layout, and the stylesheet
// is marked render-blocking, as a <link> in the markup would be.
(() => {
  const add = (tag, attrs) => document.head.append(Object.assign(document.createElement(tag), attrs));
  add('meta', { name: 'viewport', content: 'width=device-width, initial-scale=1' });
  // An empty icon: without one the browser asks the server for /favicon.ico,
  // which it does not have.
  add('link', { rel: 'icon', href: 'data:,' });
  const style = Object.assign(document.createElement('link'), { rel: 'stylesheet', href: 'style.css' });
  style.setAttribute('blocking', 'render');
  document.head.append(style);
})();
